// The frontier's Lua scripts. Each touches the keys of ONE shard (stateKeys.ts frontierShard: one hash
// tag, so one Redis Cluster slot), except ENQUEUE's optional crawl-wide counter on a plain Redis.
// Keys named by a number (a depth's list, a seen bucket) are built here from prefixes passed in ARGV.

/** Page keys per seen bucket before the next level (256x the buckets) opens: well under Redis's 512-entry intset limit. */
export const SEEN_PER_BUCKET = 300;

const HELPERS = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function depthOf(entry) return tonumber(string.match(entry, '^(%d+),')) end
local function urlOf(entry) return string.match(entry, '^%d+,%-?%d+,%d+,(.*)$') end
-- Append an entry to its depth's list (FIFO within a depth; the lowest depth is taken first).
local function push(meta, depths, qprefix, entry)
  local depth = depthOf(entry)
  redis.call('RPUSH', qprefix .. depth, entry)
  redis.call('ZADD', depths, depth, depth)
  redis.call('HINCRBY', meta, 'qn', 1)
end
-- Level 1 has 4096 buckets; each next level, opened once the shard's keys would fill the buckets, 256x more.
local function seenLevel(sn)
  local level, cap = 1, ${SEEN_PER_BUCKET} * 4096
  while sn >= cap and level < 3 do level = level + 1; cap = cap * 256 end
  return level
end
local function bucketKey(sprefix, level, h)
  return sprefix .. level .. ':' .. math.floor(h / 2 ^ (32 - 12 - 8 * (level - 1)))
end
-- Newest level first: a link seen lately is found with one lookup.
local function isSeen(sprefix, level, member, h)
  for l = level, 1, -1 do
    if redis.call('SISMEMBER', bucketKey(sprefix, l, h), member) == 1 then return true end
  end
  return false
end
local function failedJson(url, entry, reason, attempts)
  local d, s, x = string.match(entry, '^(%d+),(%-?%d+),(%d+),')
  return cjson.encode({url=url, depth=tonumber(d), seedId=tonumber(s), extraHops=tonumber(x), reason=reason, attempts=attempts})
end
`;

/**
 * Queue a batch of pages of one shard. KEYS: meta, depths[, queuedEver counter (plain Redis: the limit
 * is checked here, atomically)]. ARGV: queue prefix, seen prefix, limit (0: none), budget (-1: none; on a
 * cluster, the places reserved in the crawl-wide counter), mode ('add' | 'probe': only say what is unseen),
 * then per page: fingerprint member, bucket, entry. Returns per page 1 queued (probe: unseen), 0 seen, -1 limit.
 */
export const ENQUEUE_LUA = HELPERS + `
local meta, depths, counter = KEYS[1], KEYS[2], KEYS[3]
local qprefix, sprefix = ARGV[1], ARGV[2]
local limit, budget, probe = tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == 'probe'
local sn = tonumber(redis.call('HGET', meta, 'sn') or '0')
local level = seenLevel(sn)
local count = counter and tonumber(redis.call('GET', counter) or '0') or 0
-- The batch's writes are gathered and made at the end, one command per bucket and per depth.
local fresh, newSeen, byDepth, depthOrder, added, out = {}, {}, {}, {}, 0, {}
for i = 6, #ARGV, 3 do
  local member, h, entry = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2]
  local id = member .. ' ' .. ARGV[i + 1]
  if fresh[id] or isSeen(sprefix, level, member, h) then
    out[#out + 1] = 0
  elseif probe then
    fresh[id] = true
    out[#out + 1] = 1
  elseif budget == 0 or (counter and limit > 0 and count >= limit) then
    out[#out + 1] = -1
  else
    fresh[id] = true
    local bucket = bucketKey(sprefix, level, h)
    if not newSeen[bucket] then newSeen[bucket] = {} end
    table.insert(newSeen[bucket], member)
    sn = sn + 1
    level = seenLevel(sn)
    count = count + 1
    added = added + 1
    if budget > 0 then budget = budget - 1 end
    local depth = depthOf(entry)
    if not byDepth[depth] then
      byDepth[depth] = {}
      table.insert(depthOrder, depth)
    end
    table.insert(byDepth[depth], entry)
    out[#out + 1] = 1
  end
end
if added > 0 then
  for bucket, members in pairs(newSeen) do redis.call('SADD', bucket, unpack(members)) end
  for _, depth in ipairs(depthOrder) do
    redis.call('RPUSH', qprefix .. depth, unpack(byDepth[depth]))
    redis.call('ZADD', depths, depth, depth)
  end
  redis.call('HSET', meta, 'sn', sn)
  redis.call('HINCRBY', meta, 'qn', added)
  if counter then redis.call('INCRBY', counter, added) end
end
return out
`;

/**
 * Mark page keys seen without queueing them (seed redirect targets, a loaded state's finished pages).
 * KEYS: meta. ARGV: seen prefix, then per key: member, bucket. Returns how many were new.
 */
export const ADD_SEEN_LUA = HELPERS + `
local sn = tonumber(redis.call('HGET', KEYS[1], 'sn') or '0')
local added = 0
for i = 2, #ARGV, 2 do
  local level = seenLevel(sn)
  if not isSeen(ARGV[1], level, ARGV[i], tonumber(ARGV[i + 1])) then
    redis.call('SADD', bucketKey(ARGV[1], level, tonumber(ARGV[i + 1])), ARGV[i])
    sn = sn + 1
    added = added + 1
  end
end
redis.call('HSET', KEYS[1], 'sn', sn)
return added
`;

/**
 * Push entries as they are (a loaded state, an older build's queue: already deduplicated).
 * KEYS: meta, depths. ARGV: queue prefix, entries...
 */
export const PUSH_LUA = HELPERS + `
for i = 2, #ARGV do push(KEYS[1], KEYS[2], ARGV[1], ARGV[i]) end
return #ARGV - 1
`;

/**
 * Take the shard's next page and lease it. Retries that are due move back into their depth's list first.
 * Nothing is taken while a --saveState snapshot holds the shard (frontierShards.ts exportFrontier).
 * KEYS: meta, depths, delayed, pending, leases, snapshot hold. ARGV: queue prefix, owner. Returns the entry or nil.
 */
export const TAKE_LUA = HELPERS + `
local meta, depths, delayed = KEYS[1], KEYS[2], KEYS[3]
if redis.call('EXISTS', KEYS[6]) == 1 then return false end
for _, entry in ipairs(redis.call('ZRANGEBYSCORE', delayed, '-inf', nowMs(), 'LIMIT', 0, 100)) do
  redis.call('ZREM', delayed, entry)
  push(meta, depths, ARGV[1], entry)
end
while true do
  local depth = redis.call('ZRANGE', depths, 0, 0)[1]
  if not depth then return false end
  local list = ARGV[1] .. depth
  local entry = redis.call('LPOP', list)
  if redis.call('LLEN', list) == 0 then redis.call('ZREM', depths, depth) end
  if entry then
    redis.call('HINCRBY', meta, 'qn', -1)
    local url = urlOf(entry)
    redis.call('HSET', KEYS[4], url, entry)
    redis.call('HSET', KEYS[5], url, ARGV[2])
    return entry
  end
end
`;

export const FINISH_LUA = `
-- KEYS: pending, leases, done, listedPages; ARGV: url, owner, WACZ listing the page ('' if none)
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[4], ARGV[1], ARGV[3]) end
return 1
`;

export const SKIP_LUA = `
-- KEYS: pending, leases, skipped; ARGV: url, owner, reason
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
return 1
`;

/**
 * Give a page back to the queue (interrupted), put it back due later (defer: ARGV[6] ms), or count a
 * failed attempt: give up, or retry after a backoff that doubles with each attempt (a server that is
 * down for a moment gets that moment).
 * KEYS: pending, leases, retries, failed, delayed, meta, depths
 * ARGV: url, owner ('*': any), mode, maxRetries, reason, backoffBaseMs, backoffMaxMs, queue prefix
 */
export const RELEASE_LUA = HELPERS + `
local url = ARGV[1]
if ARGV[2] ~= '*' and redis.call('HGET', KEYS[2], url) ~= ARGV[2] then return 0 end
local entry = redis.call('HGET', KEYS[1], url)
redis.call('HDEL', KEYS[1], url)
redis.call('HDEL', KEYS[2], url)
if not entry then return 0 end
if ARGV[3] == 'failed' then
  redis.call('HINCRBY', KEYS[6], 'fa', 1)
  local attempts = redis.call('HINCRBY', KEYS[3], url, 1)
  if attempts > tonumber(ARGV[4]) then
    redis.call('RPUSH', KEYS[4], failedJson(url, entry, ARGV[5], attempts))
    return 2
  end
  local delay = math.min(tonumber(ARGV[6]) * 2 ^ (attempts - 1), tonumber(ARGV[7]))
  redis.call('ZADD', KEYS[5], nowMs() + delay, entry)
  return 1
end
if ARGV[3] == 'defer' then
  redis.call('ZADD', KEYS[5], nowMs() + tonumber(ARGV[6]), entry)
  return 1
end
push(KEYS[6], KEYS[7], ARGV[8], entry)
return 1
`;

/**
 * A rate-limit answer (--rateLimitStatusCodes) is not a failed attempt: the page waits out the
 * server's Retry-After (else a backoff doubling per answer), both capped, and is tried again, until
 * --rateLimitMaxRetries (-1: no limit) runs out. Returns {1 retry | 2 failed | 0 not the owner, delay ms}.
 * KEYS: pending, leases, rateLimitRetries, meta, failed, delayed
 * ARGV: url, owner, retryAfterMs (-1: none), maxRetries, reason, backoffBaseMs, capMs
 */
export const RATE_LIMITED_LUA = HELPERS + `
local url = ARGV[1]
if redis.call('HGET', KEYS[2], url) ~= ARGV[2] then return {0, 0} end
local entry = redis.call('HGET', KEYS[1], url)
redis.call('HDEL', KEYS[1], url)
redis.call('HDEL', KEYS[2], url)
if not entry then return {0, 0} end
redis.call('HINCRBY', KEYS[4], 'rl', 1)
local answers = redis.call('HINCRBY', KEYS[3], url, 1)
local delay = tonumber(ARGV[3])
if delay < 0 then delay = tonumber(ARGV[6]) * 2 ^ (answers - 1) end
delay = math.floor(math.min(delay, tonumber(ARGV[7])))
local maxRetries = tonumber(ARGV[4])
if maxRetries >= 0 and answers > maxRetries then
  redis.call('RPUSH', KEYS[5], failedJson(url, entry, ARGV[5], answers))
  return {2, delay}
end
redis.call('ZADD', KEYS[6], nowMs() + delay, entry)
return {1, delay}
`;

/**
 * One shard's figures: queued, delayed, pending, done, failed, failed attempts, rate-limit answers,
 * due time of its first delayed entry (-1: none), Redis's clock now (ms).
 * KEYS: meta, delayed, pending, done, failed
 */
export const SHARD_COUNTS_LUA = HELPERS + `
local m = redis.call('HMGET', KEYS[1], 'qn', 'fa', 'rl')
local first = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return {tonumber(m[1] or '0'), redis.call('ZCARD', KEYS[2]), redis.call('HLEN', KEYS[3]), redis.call('SCARD', KEYS[4]),
  redis.call('LLEN', KEYS[5]), tonumber(m[2] or '0'), tonumber(m[3] or '0'), first[2] and tonumber(first[2]) or -1, nowMs()}
`;

/** Reserve up to ARGV[1] places under the page limit ARGV[2] in the crawl-wide counter (a cluster's enqueue). */
export const RESERVE_LUA = `
local free = tonumber(ARGV[2]) - tonumber(redis.call('GET', KEYS[1]) or '0')
local granted = math.max(0, math.min(tonumber(ARGV[1]), free))
if granted > 0 then redis.call('INCRBY', KEYS[1], granted) end
return granted
`;
