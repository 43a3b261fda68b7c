import type { Browser, Page, Viewport } from "puppeteer-core";
import { logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";
import type { BrowserSetup } from "./browserSetup.js";

/** What every tab is set to on opening, besides its user agent. */
export interface TabSettings {
  viewport: Viewport | null;
  /** Set on every request of the tab, so the WARC request records carry it. */
  acceptLanguage: string | null;
}

/** Chromium switches of the setup, after the crawler's own (puppeteer merges --disable-features lists). */
export function setupChromiumArgs(setup: Pick<BrowserSetup, "lang" | "extraChromeArgs">): string[] {
  return [...(setup.lang ? [`--accept-lang=${setup.lang}`] : []), ...setup.extraChromeArgs];
}

/**
 * The user agent of the tabs and direct fetches, as browsertrix-crawler makes it: --userAgent as given
 * (no suffix); else the device's, or the browser's own, with the suffix after a space. Null: the browser's own.
 */
export function resolveUserAgent(setup: Pick<BrowserSetup, "userAgent" | "userAgentSuffix" | "device">, browserDefault: string): string | null {
  if (setup.userAgent) return setup.userAgent;
  if (!setup.device && !setup.userAgentSuffix) return null;
  const base = setup.device?.userAgent ?? browserDefault;
  return setup.userAgentSuffix ? `${base} ${setup.userAgentSuffix}` : base;
}

/** The Accept-Language header Chromium sends for --accept-lang=<tag>: "de-CH" -> "de-CH,de;q=0.9". */
export function acceptLanguageHeader(tag: string): string {
  const base = tag.split("-")[0];
  return base === tag ? tag : `${tag},${base};q=0.9`;
}

const SETUP_DEADLINE_MS = 10_000;

/** The tabs' user agent and settings, once the browser (whose own user agent a suffix extends) is up. */
export async function tabSetupFor(browser: Browser, setup: BrowserSetup): Promise<{ userAgent: string | null; tab: TabSettings }> {
  if (setup.userAgent && setup.userAgentSuffix) {
    logger.warn("browser", "--userAgentSuffix is not added to a --userAgent given in full (as in browsertrix-crawler)", { userAgent: setup.userAgent });
  }
  const needsDefault = !setup.userAgent && !setup.device && setup.userAgentSuffix;
  const browserDefault = needsDefault ? await withTimeout(browser.userAgent(), SETUP_DEADLINE_MS, "the browser did not tell its user agent") : "";
  const userAgent = resolveUserAgent(setup, browserDefault);
  if (userAgent !== setup.userAgent || setup.device) logger.info("browser", "pages are loaded as", { userAgent, device: setup.device?.name ?? null });
  return { userAgent, tab: { viewport: setup.device?.viewport ?? null, acceptLanguage: setup.lang ? acceptLanguageHeader(setup.lang) : null } };
}

/** Set a new tab up: user agent, device viewport and touch, language header. */
export async function applyTabSettings(tab: Page, userAgent: string | null, settings: TabSettings | undefined): Promise<void> {
  const steps: Promise<void>[] = [];
  if (userAgent) steps.push(tab.setUserAgent(userAgent));
  if (settings?.viewport) steps.push(tab.setViewport(settings.viewport));
  if (settings?.acceptLanguage) steps.push(tab.setExtraHTTPHeaders({ "Accept-Language": settings.acceptLanguage }));
  if (steps.length) await withTimeout(Promise.all(steps), SETUP_DEADLINE_MS, `a new tab could not be set up within ${SETUP_DEADLINE_MS / 1000}s`);
}
