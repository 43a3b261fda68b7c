/** What a person debugging a crawl can ask for (browsertrix-crawler's flags). */
export interface DebugOptions {
  /** --waitOnDone: once finished, wait for SIGINT/SIGTERM before exiting. */
  waitOnDone: boolean;
  /** --debugAccessBrowser: the browser's DevTools protocol on port 9222. */
  debugAccessBrowser: boolean;
  /** --debugAccessRedis: the embedded redis-server reachable from other hosts (no protected mode). */
  debugAccessRedis: boolean;
}

export interface RawDebugFlags {
  waitOnDone?: boolean;
  debugAccessBrowser?: boolean;
  debugAccessRedis?: boolean;
}

export function debugOptions(flags: RawDebugFlags): DebugOptions {
  return {
    waitOnDone: flags.waitOnDone ?? false,
    debugAccessBrowser: flags.debugAccessBrowser ?? false,
    debugAccessRedis: flags.debugAccessRedis ?? false,
  };
}
