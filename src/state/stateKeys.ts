/**
 * Crawl-state key layout in the crawl Redis. Every key starts with the crawl id, so several crawls can
 * share one Redis and a second crawl never sees the first one's "seen" set. On a Redis Cluster the
 * crawl-wide keys are `<crawl id>:{<crawl id>}:...` (one slot) and each frontier shard has a slot of its own.
 */
export function crawlStateKeys(crawlId: string, clustered = false) {
  // On a Redis Cluster every crawl-wide key carries the hash tag {<crawl id>}: one slot, so the scripts and
  // transactions over several of them (membership, claims, writer slots, counts) run on one node.
  const p = clustered ? `${crawlId}:{${crawlId}}` : crawlId;
  return {
    /**
     * Older builds' frontier (before the sharded one, frontierShard): a sorted set of QueuedPage JSON and
     * a set of every page key queued. Read once and moved into the shards when such a crawl is resumed.
     */
    legacyQueue: `${p}:q`,
    legacyQueueSeq: `${p}:qseq`,
    legacySeen: `${p}:s`,
    legacyPending: `${p}:p`,
    legacyLeases: `${p}:lease`,
    legacyRetries: `${p}:retries`,
    legacyRetryDelayed: `${p}:qdelay`,
    legacyFailedAttempts: `${p}:attemptsFailed`,
    legacySkippedPages: `${p}:skipped`,
    legacyDone: `${p}:d`,
    legacyListedPages: `${p}:listed`,
    legacyFailed: `${p}:f`,
    legacyRateLimitRetries: `${p}:rlretries`,
    legacyRateLimited: `${p}:rateLimited`,
    /** String: how many shards the frontier of this crawl has (set by the first process, kept for the crawl's life). */
    frontierShards: `${p}:fshards`,
    /** Counter of pages ever queued, every shard's (the page limit counts this; seen aliases are not in it). */
    frontierQueuedEver: `${p}:fseen`,
    /**
     * One shard of the frontier: the pages of the hosts hashed to it (frontierShard.ts), every key of it
     * in one Redis Cluster slot (the hash tag {<crawl id>/<shard>}), so each script runs on one node.
     */
    frontierShard: (shard: number) => frontierShardKeys(`${crawlId}:{${crawlId}/${shard}}`),
    /** Set of page keys known without being queued (a seed's redirect target): links to them are seen; not counted by the limit. */
    seenAliases: `${p}:salias`,
    /** Hash URL listed for a page under another name (a seed's redirect target) -> that page's URL: the listing is kept where the page's is. */
    listingAliases: `${p}:lalias`,
    /** List of seeds added at a seed's redirect target (--addRedirectedSeeds), JSON {origSeedId, url}; seed id = seeds given + index. */
    extraSeeds: `${p}:extraSeeds`,
    /** Hash url -> index in extraSeeds (a redirect target is added once). */
    extraSeedIndex: `${p}:extraSeedIdx`,
    /** Hash "<status> <method> <url>[ <request body digest, not for GET/HEAD>]" -> "stored", or the id of the process writing it now: an exchange is stored once per crawl. */
    storedExchanges: `${p}:exch`,
    /**
     * Set of process ids taken for dead: their leases, claims and writer slot were (or may be) taken
     * over. Added atomically with the check that the heartbeat is gone; a fenced process can never renew
     * its heartbeat again, so a process that only stalled learns it and stops instead of writing on.
     */
    fenced: `${p}:fenced`,
    /** Heartbeat key of one crawler process; its leases are void once it expires. */
    processHeartbeat: (processId: string) => `${p}:proc:${processId}`,
    /** String: "running" | "done" | "interrupted" ... */
    status: `${p}:status`,
    /** Set of other crawl ids whose records this crawl's revisits point at. */
    requiredCrawls: `${p}:reqCrawls`,
    /** Set of "<crawlId> <waczIndex>" WACZ files this crawl's revisits point at. */
    dupeRefs: `${p}:duperefs`,
    /** The same, for the revisits held by one of this crawl's WACZ files (its relation.requires). */
    dupeRefsOfWacz: (waczFilename: string) => `${p}:duperefs:${waczFilename}`,
    /** Hash WARC filename -> the WACZ filename it is packaged into. */
    warcToWacz: `${p}:warcs`,
    /** Hash WACZ filename -> bytes of the closed WARC files assigned to it (for WACZ rollover). */
    waczBytes: `${p}:waczbytes`,
    /**
     * When the next page load on a host may start (--minHostInterval, Crawl-delay). One key a script: on a
     * cluster each host's turn has a hash tag of its own, so hosts' turns spread over the nodes rather than
     * all landing on the crawl-wide slot's node.
     */
    hostTurn: (host: string) => (clustered ? `${crawlId}:{${crawlId}/host/${host}}:turn` : `${p}:host:${host}`),
    /** Hash writer slot -> id of the process writing it (a dead process's slot is taken over on restart). */
    writers: `${p}:writers`,
    /** Hash writer slot -> "<host>:<archive folder>" where its files are (only there can they be packaged). */
    writerHomes: `${p}:writerHomes`,
    /** Set of writer slots whose WACZ files are packaged; when all are, the crawl can be committed. */
    writersPackaged: `${p}:writersPackaged`,
    /** Hash page url -> latest change kind in one writer's change report (so a retried page counts once). */
    changeKinds: (writer: string) => `${p}:changes:${writer}`,
    /** Hash change kind -> pages of that kind in one writer's change report. */
    changeCounts: (writer: string) => `${p}:changecounts:${writer}`,
    /** Set of WACZ filenames packaged and complete in the dedupe index: never written again (others' relation.requires hold their hash). */
    waczSealed: `${p}:waczSealed`,
    /** Set of page URLs not crawled because robots.txt disallows them (--robots). */
    robotsSkipped: `${p}:robotsSkipped`,
    /** Counter of requests blocked by --blockRules / --blockAds (never sent, never archived), every process's. */
    blocked: `${p}:blocked`,
    /** String: the id of the process reading the sitemaps now (--useSitemap), or "done" once they were read. */
    sitemapRead: `${p}:sitemap`,
    /** List of one writer's WACZ filenames, in order. */
    waczNames: (writer: string) => `${p}:wacznames:${writer}`,
    /** Hash local WACZ filename -> JSON {path, hash}: the object it was uploaded as (STORE_ENDPOINT_URL), so a resumed crawl does not upload it again. */
    uploadedWacz: `${p}:uploaded`,
    /** Set of object names claimed for uploads (STORE_FILENAME filled in): two WACZ files never get one name. */
    uploadNames: `${p}:uploadNames`,
    /**
     * String: the digest of the --saveState file loaded into this Redis (loaded once: a rerun keeps the progress
     * made since), or "loading <digest> <process id>" while that process loads it (savedState.ts).
     */
    stateLoaded: `${p}:stateLoaded`,
    // browsertrix-crawler's own names (src/util/state.ts), read by the Browsertrix service:
    /** List of crawled pages, JSON, newest first (--writePagesToRedis). */
    btxPages: `${p}:pages`,
    /** List of error log lines, JSON, newest first (--logErrorsToRedis; a state file's `errors`). */
    btxErrors: `${p}:e`,
    /** List of behavior log lines, JSON, newest first (--logBehaviorsToRedis). */
    browsertrixBehaviors: `${p}:b`,
    /** Pub/sub channel of the live view's worker packets (--screencastRedis), JSON {msg: "screencast", id, url, data...}. */
    screencastChannel: `c:${p}:cast`,
    /** Pub/sub channel where a live view says "connect" when its first viewer comes and "disconnect" when its last leaves. */
    screencastControl: `c:${p}:ctrl`,
    // Per-seed budgets and the per-host page cap (budgets/seedBudgets.ts): a hash field per seed or host, never per URL.
    /** Hash seed id (of a seed given) -> pages of the seed crawled. */
    seedPages: `${p}:seedPages`,
    /** Hash seed id -> WARC bytes written for the seed's pages and their resources. */
    seedBytes: `${p}:seedBytes`,
    /** Hash seed id -> "pageLimit" | "sizeLimit": the seed's budget that stopped it (the first one reached). */
    seedEnds: `${p}:seedEnds`,
    /** Hash host -> pages crawled on that host (--maxPagesPerHost). */
    hostPages: `${p}:hostPages`,
    /** Hash page url -> JSON {seed, host, owner}: a page started and not settled yet, holding a slot of its seed's and host's budgets. */
    budgetSlots: `${p}:budgetSlots`,
    // Hybrid capture's templates (hybrid/templateBook.ts): a few fields per template in two crawl-wide hashes.
    /**
     * Hash "<template>:<field>" -> value, for each template: `slots` learning slots taken, `slotAt` when the newest
     * was taken (ms, Redis's clock), `observed` browsed pages learned from, `firstVerify` when the first verify page
     * was taken ("done" once judged), `sinceVerify` pages the guard let through since the last verify page (one in
     * verifyEvery is a verify page), `verifyNext` the next page is verified (after an adoption), `adoptions` and
     * `unexplainedAdoptions` verify pages whose misses were adopted (all, and those no selector explains),
     * `explaining:<selector>` when a page took the selector to verify, `explained:<selector>` the page that did,
     * `fellBack` why the template went back to the browser for good.
     */
    templateState: `${p}:tmpl`,
    /**
     * Hash "<template>:<n>" -> the JSON of the template's n-th browsed page's observation (n from 1 to learnPages), and
     * "<template>:adopted:<n>" -> the JSON of the URLs its n-th adopting verify page added.
     */
    templateObservations: `${p}:tmplobs`,
  };
}

export type CrawlStateKeys = ReturnType<typeof crawlStateKeys>;

/**
 * The keys of one frontier shard. A queue entry is "<depth>,<seedId>,<extraHops>,<url>" (frontierEntry.ts).
 * Keys whose name ends in a number are built inside the Lua scripts from the prefixes given here.
 */
function frontierShardKeys(s: string) {
  return {
    /** The shard's hash tag prefix (what every key below starts with). */
    prefix: s,
    /** Prefix of the FIFO list of queued entries at one depth: `${queueAtDepth}<depth>`. */
    queueAtDepth: `${s}:q:`,
    /** Sorted set of the depths whose lists hold entries (member = score = depth): the next page is at the lowest. */
    depths: `${s}:qd`,
    /** Sorted set of entries waiting out a retry back-off or a deferral (score = when due, ms, Redis's clock). */
    delayed: `${s}:qdelay`,
    /** Hash: qn = entries queued in the lists, sn = page keys in the seen buckets, fa = failed attempts, rl = rate-limit answers. */
    meta: `${s}:meta`,
    /**
     * Prefix of the seen buckets `${seenBucket}<level>:<bucket>`: sets of 64-bit key fingerprints, small
     * enough (a few hundred) for Redis's 8-byte intset encoding: 4096 buckets at level 1, 256x more at each next
     * level, opened as the shard grows (lookups check every level).
     */
    seenBucket: `${s}:sn:`,
    /** Hash url -> entry of pages being crawled now. */
    pending: `${s}:p`,
    /** Hash url -> owner process id holding the page's lease. */
    leases: `${s}:lease`,
    /** Hash url -> number of failed attempts so far. */
    retries: `${s}:retries`,
    /** Hash url -> rate-limit answers (--rateLimitStatusCodes) the page got so far. */
    rateLimitRetries: `${s}:rlretries`,
    /** Hash url -> why a page taken from the queue was not crawled: "duplicate" or "pageLimit" (--dedupePagesMinDepth). */
    skippedPages: `${s}:skipped`,
    /** Set of URLs finished (captured). */
    done: `${s}:d`,
    /** Hash page url -> the WACZ whose pages list keeps it (set with done: whoever finished the page lists it). */
    listedPages: `${s}:listed`,
    /** List of failed page JSON. */
    failed: `${s}:f`,
    /** String (expiring): set while a --saveState snapshot reads the frontier: no page is taken from the shard meanwhile. */
    snapshotHold: `${s}:hold`,
  };
}

export type FrontierShardKeys = ReturnType<typeof frontierShardKeys>;
