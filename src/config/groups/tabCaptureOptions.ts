import type { OriginOverrideRule, RateLimitMatchRule } from "../../capture/captureRules.js";
import { OptionsError } from "../optionsError.js";

/** browsertrix-crawler's --serviceWorker (--sw) choices. */
export const SERVICE_WORKER_MODES = ["disabled", "disabled-if-profile", "enabled"] as const;
export type ServiceWorkerMode = (typeof SERVICE_WORKER_MODES)[number];

/** browsertrix-crawler's DEFAULT_RATE_LIMIT_RULES (an Incapsula challenge page answered 200). */
export const DEFAULT_RATE_LIMIT_ON_MATCH = ['src="/_Incapsula_Resource?:200'];

/** How each tab captures beyond recording, in browsertrix-crawler's flags and meanings. */
export interface TabCaptureConfig {
  /** --serviceWorker: whether pages may use service workers ("disabled-if-profile": disabled with a --profile). */
  serviceWorker: ServiceWorkerMode;
  /** Whether the tabs bypass service workers (Network.setBypassServiceWorker). */
  bypassServiceWorker: boolean;
  /** --originOverride orig=new, in the order given (the first whose origin matches wins). */
  originOverride: OriginOverrideRule[];
  /** --saveStorage: each page's localStorage/sessionStorage in its document's WARC-JSON-Metadata. */
  saveStorage: boolean;
  /** --rateLimitOnMatch: text rules making a page a rate-limit answer. */
  rateLimitOnMatch: RateLimitMatchRule[];
}

export interface RawTabCaptureFlags {
  serviceWorker?: string;
  originOverride?: string[];
  saveStorage?: boolean;
  rateLimitOnMatch?: string[];
  /** --profile: "disabled-if-profile" depends on it. */
  profile?: string;
}

function flagOrigin(value: string, flagValue: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new OptionsError(`--originOverride takes orig=new with two http(s) origins (e.g. https://host=http://127.0.0.1:8080), got ${JSON.stringify(flagValue)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new OptionsError(`--originOverride takes http(s) origins, got ${JSON.stringify(flagValue)}`);
  return url.origin;
}

/** "orig=new" (browsertrix-crawler's form); only the origins of the two URLs count. */
export function parseOriginOverride(value: string): OriginOverrideRule {
  const at = value.indexOf("=");
  if (at <= 0 || at === value.length - 1) throw new OptionsError(`--originOverride takes orig=new with two http(s) origins (e.g. https://host=http://127.0.0.1:8080), got ${JSON.stringify(value)}`);
  return { from: flagOrigin(value.slice(0, at).trim(), value), to: flagOrigin(value.slice(at + 1).trim(), value) };
}

/** "<regex>" or "<regex>:<status>" (the status after the last colon, as a number only). */
export function parseRateLimitRule(value: string): RateLimitMatchRule {
  const withStatus = /^(.*):(\d+)$/s.exec(value);
  const source = withStatus ? withStatus[1] : value;
  const status = withStatus ? Number(withStatus[2]) : 0;
  if (withStatus && (status < 100 || status > 599)) throw new OptionsError(`--rateLimitOnMatch takes <regex> or <regex>:<HTTP status>, got status ${status} in ${JSON.stringify(value)}`);
  if (!source) throw new OptionsError(`--rateLimitOnMatch takes <regex> or <regex>:<HTTP status>, got ${JSON.stringify(value)}`);
  try {
    return { regex: new RegExp(source), status };
  } catch (err) {
    throw new OptionsError(`--rateLimitOnMatch: not a regular expression: ${JSON.stringify(source)} (${err instanceof Error ? err.message : String(err)})`);
  }
}

export function tabCaptureOptions(flags: RawTabCaptureFlags): TabCaptureConfig {
  const mode = (flags.serviceWorker ?? "disabled").trim();
  if (!(SERVICE_WORKER_MODES as readonly string[]).includes(mode)) {
    throw new OptionsError(`--serviceWorker takes one of ${SERVICE_WORKER_MODES.join(", ")}, got ${JSON.stringify(flags.serviceWorker)}`);
  }
  const serviceWorker = mode as ServiceWorkerMode;
  const rules = flags.rateLimitOnMatch ?? DEFAULT_RATE_LIMIT_ON_MATCH;
  return {
    serviceWorker,
    // As in browsertrix-crawler: a crawl with a --profile (logged in) keeps pages off their service workers.
    bypassServiceWorker: serviceWorker === "disabled" || (serviceWorker === "disabled-if-profile" && !!flags.profile),
    originOverride: (flags.originOverride ?? []).filter((v) => v.trim()).map(parseOriginOverride),
    saveStorage: flags.saveStorage ?? false,
    rateLimitOnMatch: rules.filter((v) => v !== "").map(parseRateLimitRule),
  };
}
