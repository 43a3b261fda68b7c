/**
 * The Referer a browser sends under its default policy, strict-origin-when-cross-origin: the referrer whole
 * (without its fragment and credentials) to its own origin, its origin alone elsewhere, nothing on a downgrade from
 * https to http. Null when the referrer is no URL with an origin. For the fetches the crawler makes as the browser
 * would (a player's stream files, a page fetched without a browser).
 */
export function defaultPolicyReferer(referrer: string, target: string): string | null {
  let from: URL;
  let to: URL;
  try {
    from = new URL(referrer);
    to = new URL(target);
  } catch {
    return null;
  }
  if (from.origin === "null") return null;
  if (from.protocol === "https:" && to.protocol !== "https:") return null;
  if (from.origin !== to.origin) return `${from.origin}/`;
  from.hash = "";
  from.username = "";
  from.password = "";
  return from.href;
}
