// What a page's answer says beyond its status: a rate-limit page answered 200 (--rateLimitOnMatch), or the login
// page a lost session lands on.
import type { RateLimitMatchRule } from "./captureRules.js";

/**
 * Whether `url` is the login page `loginUrl`: same origin and path, whatever the query (a login page
 * usually carries where to go back to, `?next=/members/a`) or fragment.
 */
export function isLoginPage(url: string, loginUrl: string): boolean {
  try {
    const a = new URL(url);
    const b = new URL(loginUrl);
    const path = (p: string) => p.replace(/\/+$/, "") || "/";
    return a.origin === b.origin && path(a.pathname) === path(b.pathname);
  } catch {
    return false;
  }
}

/** Types whose text --rateLimitOnMatch reads (browsertrix-crawler's: those it may rewrite). */
const MATCHED_TYPES = new Set(["text/html", "application/json", "text/javascript", "application/javascript", "application/x-javascript"]);
/** Larger bodies are not read as text (browsertrix-crawler's limit too). */
const MAX_MATCHED_SIZE = 25_000_000;

/** The rule a response's body matches (--rateLimitOnMatch), or null. */
export function rateLimitRuleMatched(rules: readonly RateLimitMatchRule[], mime: string, status: number, bytes: Uint8Array): RateLimitMatchRule | null {
  if (!rules.length || !MATCHED_TYPES.has(mime.toLowerCase()) || !bytes.length || bytes.length > MAX_MATCHED_SIZE) return null;
  const applicable = rules.filter((rule) => rule.status === 0 || rule.status === status);
  if (!applicable.length) return null;
  const text = new TextDecoder().decode(bytes);
  return applicable.find((rule) => rule.regex.test(text)) ?? null;
}
