// The dedupe index as the indexer (indexer/) sees it: the one surface it imports from src/ besides the WACZ
// reader (src/wacz/reader/), the logger and the version. Everything else in src/ stays the crawler's own.

// Opening an index, its layout and key names (both layouts: one node, or sharded over a Redis Cluster).
export { connectDedupeIndex } from "./connectIndex.js";
export { keysOf, layoutOf, scriptByLayout, type DedupeRedis } from "./indexLayout.js";
export { COUNT_FIELDS, formatHashEntry, LUA_KEY, type HashEntry } from "./indexKeys.js";
// Which crawl allhashes names for a payload several hold, whatever the import order (crawlorder).
export { CrawlRanks, rankCrawls, type HeldDigest } from "./payloadOwnership.js";
export { entriesSharded, rollbackWaczSharded, writeEntriesSharded } from "./shardedHashes.js";
// What the index counts and indexes: the same rule as the crawler's, so an imported crawl's totals match.
export { captureKind, cdxWarcType, EMPTY_PAYLOAD_DIGEST, isIndexablePayload, tallyCounts } from "./captureRule.js";
// One crawl's entries and WACZ list; commit into the merged index, cancel, purge.
export { DedupeIndex } from "./dedupeIndex.js";
export { cancelCrawl, CancelRefusedError, commitCrawl, mergeCrawlHashes } from "./commit.js";
export { crawlsMissingFrom, finishPurges, purgeCrawls, trackRemovedCrawls } from "./purge.js";
// The import's final step respects a purge's rebuild as a commit does.
export { COMMIT_GUARD_LUA, epochWhenNoRebuild } from "./mergeLease.js";
// Import leases are held under the one liveness identity and follow the one rule of shared ownership.
export { isHolderGone, newHolderId } from "../ownership/processIdentity.js";
export { ownerScript } from "../ownership/ownerRule.js";
