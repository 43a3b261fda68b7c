/**
 * The one rule of shared ownership, written once for every Lua script that acts on what another process
 * (or importer) holds: page leases, exchange claims, the sitemap reading, writer slots, import leases.
 *
 * A holder is alive if and only if its liveness key exists: a crawler process's heartbeat
 * (`<crawlId>:proc:<processId>`, renewed by Liveness) or an import entry's lease (`pending:lease:<name>`).
 * Whoever takes over something a dead holder had fences that holder in the same atomic step (adds it to
 * the crawl's fenced set), so a holder that only stalled can never renew its heartbeat and act again on
 * what was handed on. (Import leases need no fence set: each take has its own token, compared on every
 * later step.)
 *
 * TypeScript code asks the same questions through Membership (isAlive, fenceIfDead), which run these.
 */
export const OWNER_RULE_LUA = `
local function is_alive(liveness_key)
  return redis.call('EXISTS', liveness_key) == 1
end
local function take_over(liveness_key, fenced_key, holder)
  if is_alive(liveness_key) then return false end
  if fenced_key ~= '' then redis.call('SADD', fenced_key, holder) end
  return true
end
`;

/** A Lua script body that may call is_alive(liveness_key) and take_over(liveness_key, fenced_key, holder). */
export function ownerScript(body: string): string {
  return `${OWNER_RULE_LUA}\n${body}`;
}
