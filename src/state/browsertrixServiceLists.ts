import type { Cluster, Redis } from "ioredis";
import type { CrawlStateKeys } from "./stateKeys.js";

/** Which lists the crawl fills for the Browsertrix service (--writePagesToRedis, --logErrorsToRedis, --logBehaviorsToRedis). */
export interface ServiceListChoice {
  pages: boolean;
  errors: boolean;
  behaviors: boolean;
}

/** A page as browsertrix-crawler pushes it to `<crawlId>:pages` (its pages.jsonl entry without text, plus the WACZ). */
export interface ServicePageEntry {
  id: string;
  url: string;
  title: string;
  loadState: number;
  ts: string;
  mime: string;
  status: number;
  seed?: true;
  depth: number;
  favIconUrl?: string;
  filename: string;
}

// browsertrix-crawler's logger: errors (and its interrupt, fatal levels) to :e; the behavior contexts'
// info, warn and error lines to :b, and every line of site-specific behaviors.
const ERROR_LEVELS = new Set(["error", "interrupt", "fatal"]);
const BEHAVIOR_LEVELS = new Set(["info", "warn", "error"]);
const BEHAVIOR_CONTEXTS = new Set(["behavior", "behaviorScript"]);

const FLUSH_DEADLINE_MS = 5000;

/**
 * The Redis lists the Browsertrix service reads, in browsertrix-crawler's key names and JSON: LPUSH,
 * newest first. Pushes do not hold the crawl up; `flush` waits for those still on their way.
 */
export class BrowsertrixServiceLists {
  private readonly inFlight = new Set<Promise<unknown>>();

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: CrawlStateKeys,
    readonly choice: ServiceListChoice,
  ) {}

  /** A log line as written (JSON, after the level and context filters). */
  logLine(level: string, context: string, line: string): void {
    if (this.choice.errors && ERROR_LEVELS.has(level)) this.push(this.keys.btxErrors, line);
    if (this.choice.behaviors && ((BEHAVIOR_CONTEXTS.has(context) && BEHAVIOR_LEVELS.has(level)) || context === "behaviorScriptCustom")) {
      this.push(this.keys.browsertrixBehaviors, line);
    }
  }

  page(entry: ServicePageEntry): void {
    if (this.choice.pages) this.push(this.keys.btxPages, JSON.stringify(entry));
  }

  private push(key: string, value: string): void {
    // A Redis that is away loses these lines, as in browsertrix-crawler: they are copies of the log and pages files.
    const pushed = this.redis.lpush(key, value).catch(() => undefined);
    this.inFlight.add(pushed);
    void pushed.finally(() => this.inFlight.delete(pushed));
  }

  async flush(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_DEADLINE_MS)));
    await Promise.race([Promise.all([...this.inFlight]), deadline]);
    clearTimeout(timer);
  }
}
