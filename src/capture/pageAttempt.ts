import type { ConfirmedCapture } from "../archive/exchange.js";
import { logger } from "../log/logger.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import { tryNormalizeCrawlUrl, withoutHash } from "../scope/urls.js";
import { StorageGate } from "./pageStorage.js";
import { AnswerNovelty } from "./answerNovelty.js";
import { DroppedRequests } from "./bodies/droppedRequests.js";
import { StreamCutoff } from "./bodies/responseBody.js";
import type { PageStores } from "./requests/earlierAttempts.js";

/** Summary of what a page loaded, for deciding the page's status and type. */
export interface CapturedSummary {
  url: string;
  status: number;
  mime: string;
  resourceType: string;
  location: string | null;
  date: Date;
}

/** The page's own document answered with a rate-limit status (--rateLimitStatusCodes): not stored. */
export interface RateLimitAnswer {
  url: string;
  status: number;
  /** The Retry-After header as sent, if any. */
  retryAfter: string | null;
}

/**
 * How long large bodies of declared length may go on arriving after their page is done: a body the size of the
 * default --maxResourceSize (512 MB) needs ~2.1 MB/s through CDP in 240 s. CDP hands bodies over at 10-14 MB/s on
 * an idle 2-core machine and at a third of that on a loaded one, where 120 s cut such a body short. One that stops
 * flowing is still cut after 5 s. A page's hard deadline leaves room for it (crawl/pages/pageSteps.ts).
 */
export const DOWNLOAD_GRACE_MS = 240_000;
/**
 * The one deadline of a page's drain (PageCapture.endPage): what was in flight when the page ended has this long
 * to be stored. Open bodies are cut sooner by their own rules (streams, downloads); this bounds the rest.
 */
export const END_DRAIN_DEADLINE_MS = DOWNLOAD_GRACE_MS + 15_000;

/** What a page's end cut off: requests refused once it was done, exchanges not yet stored at the drain's deadline. */
export interface CutAtEnd {
  refused: number;
  unfinished: number;
}

/** What one attempt at loading a page captured; read once the page is done. */
export class PageAttempt {
  readonly captured: CapturedSummary[] = [];
  /** The page URL and the URLs its redirects led to: the page's own documents (main frame only). */
  private readonly documentChain = new Set<string>();
  /** Where each of the page's own documents is stored: the WACZ that lists the page must hold them. */
  readonly documentWacz = new Map<string, string | null>();
  /** Set when the page's document was a rate-limit answer: the attempt stores nothing of it. */
  rateLimited: RateLimitAnswer | null = null;
  /** Set when the page's document redirected to the login page (its session is gone): the attempt stores nothing. */
  loggedOut: { url: string; loginPage: string } | null = null;
  /** Set when the page's document could not be fetched through the proxy (the relay's 59x answer): nothing stored. */
  proxyFailure: string | null = null;
  /** --dedupePagesMinDepth: if the dedupe index holds the payload of the page's document, the page goes no further. */
  skipIfArchived = false;
  /** It did: the document was stored (a revisit) and the browser stopped from rendering it. */
  duplicate = false;
  /** URLs whose exchange could not be stored (body unavailable, or storing failed). */
  readonly lost = new Set<string>();
  /** URLs whose bodies came cut off (by the network: a retry may get them whole). */
  readonly truncated = new Set<string>();
  /** Where the attempt's exchanges are stored, even after it ended (its seed is charged their bytes); null: the tab's sink. */
  sink: ExchangeSink | null = null;
  /** Set once the page is done (PageCapture.endPage): nothing more of it is captured. */
  ended = false;
  /**
   * Set once the page's drain is over (its deadline passed or nothing was left): the page counts as crawled, so
   * nothing is fetched for it outside the browser any more (that request would reach its server after the page).
   */
  drained = false;
  /** When a request of the page last went on the wire (epoch ms). */
  lastOnWireAt = 0;
  /**
   * Requests sent on that are neither on the wire nor answered nor failed, by network id, with their frame: a page's
   * end waits for them.
   */
  readonly stillInBrowser = new Map<string, { frameId: string; url: string }>();
  /** A request sent on left the browser (its headers written) or was answered (by its server or the HTTP cache). */
  left(networkId: string): void {
    if (this.stillInBrowser.delete(networkId)) this.lastOnWireAt = Date.now();
  }
  /** Documents went (a frame taken down, the previous page's replaced): their requests still inside the browser never leave it. */
  documentsGone(gone: (networkId: string, frameId: string) => boolean): void {
    for (const [networkId, { frameId }] of this.stillInBrowser) if (gone(networkId, frameId)) this.stillInBrowser.delete(networkId);
  }
  /** The answers to the page's script-made requests, each new to the page or a repeat (a feed that ran out). */
  readonly answers = new AnswerNovelty();
  /** Requests the browser dropped: a body read waiting for one of them is given up. */
  readonly dropped = new DroppedRequests();
  /** What the page's end cut off (for its timings line). */
  readonly cutAtEnd: CutAtEnd = { refused: 0, unfinished: 0 };
  /** URLs whose exchange was still being stored at the drain's deadline: not known to be in the archive. */
  readonly unfinished = new Set<string>();
  /** Ends this attempt's bodies of unknown length (maybe never-ending) once the page is done. */
  readonly streams = new StreamCutoff(1000, 10_000);
  /** Ends this attempt's large bodies of declared length once the page is done, if they stall or take long. */
  readonly downloads = new StreamCutoff(5000, DOWNLOAD_GRACE_MS);

  /** --saveStorage: holds the page's document until its storage is read after the load. */
  readonly storageGate: StorageGate | null;

  /** The page is done: streams still open are cut once idle or past their grace; storage not read by now is not. */
  endStreams(): void {
    this.storageGate?.done(null);
    this.streams.end();
    this.downloads.end();
  }
  /**
   * Where the page's attempts in this process stored each URL's response (this one's join them); null: not
   * remembered (a service worker's capture).
   */
  stores: PageStores | null = null;
  /** The attempt is a retry: a request `stores` holds is answered from the archive, not fetched again. */
  answersFromStores = false;

  /** URLs whose whole resource was fetched after a 206 in this attempt: once is enough. */
  readonly refetched = new Set<string>();

  /**
   * @param lastAttempt the page's last attempt: cut-off bodies are stored (marked truncated) rather than
   *   dropped for a retry to get them whole, since no retry is left.
   */
  constructor(
    readonly lastAttempt: boolean,
    /** The page this attempt loads ("" for a service worker's capture). */
    readonly pageUrl = "",
    saveStorage = false,
  ) {
    this.storageGate = saveStorage ? new StorageGate() : null;
    // The browser requests a page without its #fragment (kept in page URLs with --allowHashUrls).
    if (pageUrl) this.documentChain.add(withoutHash(pageUrl));
  }

  /** A main-frame document response: one of the page's own when its URL is the page's or a redirect from it led there. */
  notePageDocument(url: string, status: number, location: string | null): boolean {
    if (!this.documentChain.has(url)) return false;
    const next = status >= 300 && status < 400 && location ? tryNormalizeCrawlUrl(location, url) : null;
    if (next) this.documentChain.add(next);
    return true;
  }

  /**
   * The page's own documents the browser loaded under another URL by itself (HTTPS Upgrades, HSTS: http:// ->
   * https://): followed as redirects are, but nothing is stored for the URL asked for, as no server answered it.
   */
  readonly internalRedirects = new Map<string, string>();

  /** The browser redirected a main-frame document by itself; noted when it is one of the page's own. */
  noteInternalRedirect(from: string, to: string): void {
    if (!this.documentChain.has(from)) return;
    this.documentChain.add(to);
    this.internalRedirects.set(from, to);
  }

  isPageDocument(url: string): boolean {
    return this.documentChain.has(url);
  }
}

/** Headers that make a page's document request conditional, and the capture a 304 would confirm. */
export interface ConditionalRequest {
  headers: Record<string, string>;
  confirms: ConfirmedCapture;
}

/** A request on the wire this long ago has reached its server (on loopback; a page's end waits out the rest). */
const SENT_REACHES_MS = 50;

/**
 * Once `attempt` has ended, its requests already sent on have reached their server: a page's end waits (within
 * a deadline) until each is on the wire (the browser wrote its headers) or answered. On a loaded machine, or
 * behind busy connections, a request sent on can wait a while before it leaves the browser; one on the wire and
 * still unanswered (a long poll) has arrived.
 */
export async function sentRequestsArrived(attempt: PageAttempt): Promise<void> {
  const deadline = Date.now() + SENT_DEADLINE_MS;
  while (attempt.stillInBrowser.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  if (attempt.stillInBrowser.size > 0) {
    const urls = [...attempt.stillInBrowser.values()].slice(0, 5).map((request) => request.url);
    logger.debug("capture", "requests sent on never left the browser by the page's end", { page: attempt.pageUrl, count: attempt.stillInBrowser.size, urls });
  }
  const left = attempt.lastOnWireAt + SENT_REACHES_MS - Date.now();
  if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
}

/** How long a page's end waits at most for its requests sent on to leave the browser. */
const SENT_DEADLINE_MS = 3000;
