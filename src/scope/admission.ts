import { logger } from "../log/logger.js";
import type { RobotsTxt } from "../robots/robotsTxt.js";
import type { CrawlState, QueuedPage } from "../state/crawlState.js";
import { crawlKey } from "./urls.js";

export type Admission = "queued" | "seen" | "limit" | "robots";

/**
 * The one way pages enter the queue (seeds, links, sitemap entries): a page is known by its key
 * (crawlKey: ?b=2&a=1 is ?a=1&b=2, "/p?" is "/p"), so it is queued once, under the URL seen first.
 * With --robots, a page robots.txt disallows is counted as skipped and never queued, so it is never
 * fetched and takes no place under --limit.
 */
export class PageAdmission {
  constructor(
    private readonly state: CrawlState,
    private readonly limit: number,
    private readonly robots: RobotsTxt | null,
  ) {}

  async admit(page: QueuedPage): Promise<Admission> {
    if (this.robots) {
      const verdict = await this.robots.check(page.url);
      if (!verdict.allowed) {
        if (await this.state.addRobotsSkipped(page.url)) {
          logger.info("robots", "page not crawled: robots.txt disallows it", { url: page.url, reason: verdict.reason, agent: this.robots.agent, depth: page.depth });
        }
        return "robots";
      }
    }
    // A URL keeps a fragment only where its scope tells pages apart by it (--allowHashUrls).
    return this.state.enqueue(page, this.limit, crawlKey(page.url, true));
  }
}
