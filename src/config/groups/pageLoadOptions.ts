import { KnownDevices } from "puppeteer-core";
import { OptionsError } from "../optionsError.js";
import { headerSecrets, HeaderRuleError, parseHeaderRule, type HeaderRule } from "../../fetch/requestHeaders.js";
import { splitList } from "../flagValues.js";
import { WAIT_UNTIL_EVENTS, type BrowserSetup, type DeviceEmulation, type WaitUntilEvent } from "../../browser/browserSetup.js";

/** How each page is loaded, and the browser it is loaded in (browsertrix-crawler's flag names). */
export interface PageLoadOptions {
  /** --waitUntil: what the navigation waits for, all of them, within --pageLoadTimeout. */
  waitUntil: WaitUntilEvent[];
  /** --netIdleMaxRequests: requests that may still be in flight when the network counts as idle. */
  netIdleMaxRequests: number;
  /** --lang: the browser's language (navigator.language, Accept-Language); null = Chromium's own. */
  lang: string | null;
  /** --userAgentSuffix: appended to the browser's user agent (the device's with --mobileDevice); not with --userAgent. */
  userAgentSuffix: string | null;
  /** --mobileDevice: viewport, touch and user agent every tab emulates; null = desktop. */
  mobileDevice: DeviceEmulation | null;
  /** --extraChromeArgs: more Chromium command-line switches, after ours. */
  extraChromeArgs: string[];
  /** --header (and `headers:` by host in --config): request headers added for every host or one host (fetch/requestHeaders.ts). */
  requestHeaders: HeaderRule[];
}

export interface RawPageLoadFlags {
  waitUntil?: string[];
  netIdleMaxRequests?: string;
  lang?: string;
  userAgentSuffix?: string;
  mobileDevice?: string;
  extraChromeArgs?: string[];
  /** `Name: value` or `host Name: value` items. */
  header?: string[];
}

/**
 * Our default is `load`, then the --netIdleWait wait (bounded by it, not by --pageLoadTimeout as
 * browsertrix-crawler's default `load,networkidle2` is): the network going quiet is waited for all the same,
 * and a page that never goes quiet costs --netIdleWait, not the whole --pageLoadTimeout.
 */
export const DEFAULT_WAIT_UNTIL: WaitUntilEvent[] = ["load"];
/**
 * 0 here (browsertrix-crawler: 1): a page's one slow request (a script's late API call) is waited for,
 * up to --netIdleWait, rather than cut off. Streams count as quiet once they stream (capture/networkActivity.ts).
 */
export const DEFAULT_NET_IDLE_MAX_REQUESTS = 0;

/**
 * --extraChromeArgs, after the environment's CHROME_FLAGS (split at spaces, as browsertrix-crawler splits them;
 * its image sets them for the whole container).
 */
export function pageLoadOptions(flags: RawPageLoadFlags, env: NodeJS.ProcessEnv = {}): PageLoadOptions {
  return {
    waitUntil: waitUntil(flags.waitUntil),
    netIdleMaxRequests: netIdleMaxRequests(flags.netIdleMaxRequests),
    lang: flags.lang === undefined || flags.lang.trim() === "" ? null : language(flags.lang),
    userAgentSuffix: flags.userAgentSuffix?.trim() || null,
    mobileDevice: flags.mobileDevice === undefined || flags.mobileDevice.trim() === "" ? null : device(flags.mobileDevice),
    // Not split at commas: a switch's own value may hold them (--blink-settings=a=1,b=2).
    extraChromeArgs: [...(env.CHROME_FLAGS ?? "").split(" "), ...(flags.extraChromeArgs ?? []).map((arg) => arg.trim())].filter(Boolean),
    requestHeaders: (flags.header ?? []).map((text) => {
      try {
        return parseHeaderRule(text);
      } catch (err) {
        throw err instanceof HeaderRuleError ? new OptionsError(err.message) : err;
      }
    }),
  };
}

/** The --header values that may hold a credential (a cookie, a token); items that do not parse are left to pageLoadOptions to refuse. */
export function headerFlagSecrets(items: string[]): string[] {
  return headerSecrets(items.flatMap((text) => {
    try {
      return [parseHeaderRule(text)];
    } catch {
      return [];
    }
  }));
}

function waitUntil(values: string[] | undefined): WaitUntilEvent[] {
  const events = splitList(values);
  for (const event of events) {
    if (!(WAIT_UNTIL_EVENTS as readonly string[]).includes(event)) {
      throw new OptionsError(`--waitUntil takes a comma-separated list of ${WAIT_UNTIL_EVENTS.join(", ")}; got ${JSON.stringify(event)}`);
    }
  }
  return events.length ? ([...new Set(events)] as WaitUntilEvent[]) : [...DEFAULT_WAIT_UNTIL];
}

function netIdleMaxRequests(value: string | undefined): number {
  if (value === undefined) return DEFAULT_NET_IDLE_MAX_REQUESTS;
  if (!/^\d+$/.test(value.trim())) throw new OptionsError(`--netIdleMaxRequests must be a whole number of requests (0 or more), got ${JSON.stringify(value)}`);
  return Number(value.trim());
}

let knownLanguages: Intl.DisplayNames | null = null;
/** Made when a --lang is read: making it costs ~10 ms of every crawler's start (ICU's language names). */
function languageNames(): Intl.DisplayNames {
  return (knownLanguages ??= new Intl.DisplayNames(["en"], { type: "language", fallback: "none" }));
}

/**
 * A BCP-47 tag whose language is a known ISO 639 one: "de", "de-CH", "zh-Hans-CN" (browsertrix-crawler
 * takes only two-letter codes; every one of those is taken here too).
 */
function language(value: string): string {
  const tag = value.trim();
  let canonical: string | null = null;
  try {
    canonical = Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    canonical = null;
  }
  const primary = canonical ? new Intl.Locale(canonical).language : "";
  if (!canonical || !/^[a-z]{2,3}$/.test(primary) || !languageNames().of(primary)) {
    throw new OptionsError(`--lang must be a language code such as en, de or pt-BR (BCP 47: ISO 639 language, optional -region), got ${JSON.stringify(value)}`);
  }
  return canonical;
}

function device(value: string): DeviceEmulation {
  const devices: Readonly<Record<string, Omit<DeviceEmulation, "name">>> = KnownDevices;
  const name = value.trim();
  // As in browsertrix-crawler, a hyphen may stand for a space ("Pixel-2"); case does not matter here.
  const tried = [name, name.replace("-", " "), name.replace(/-/g, " ")].map((n) => n.toLowerCase());
  const found = tried.map((n) => Object.keys(devices).find((key) => key.toLowerCase() === n)).find((key) => key !== undefined);
  if (found === undefined) {
    const word = name.split(/[\s-]/)[0].toLowerCase();
    const like = Object.keys(devices).filter((n) => word && n.toLowerCase().startsWith(word)).slice(0, 5);
    throw new OptionsError(
      `--mobileDevice: unknown device ${JSON.stringify(value)}${like.length ? ` (like it: ${like.map((n) => JSON.stringify(n)).join(", ")})` : ""}; ` +
        `the names are those of puppeteer's KnownDevices (https://pptr.dev/api/puppeteer.knowndevices), e.g. "Pixel 2", "iPhone X"`,
    );
  }
  return { name: found, userAgent: devices[found].userAgent, viewport: { ...devices[found].viewport } };
}

/** The browser and tab setup of a crawl's options. */
export function browserSetupOf(options: { userAgent: string | null; pageLoad: PageLoadOptions }): BrowserSetup {
  const { lang, userAgentSuffix, mobileDevice, extraChromeArgs } = options.pageLoad;
  return { userAgent: options.userAgent, userAgentSuffix, device: mobileDevice, lang, extraChromeArgs };
}
