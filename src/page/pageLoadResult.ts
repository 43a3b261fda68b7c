import type { BehaviorOutcome } from "../behaviors/behaviors.js";
import type { CapturedSummary, ConditionalRequest, RateLimitAnswer } from "../capture/pageCapture.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import type { PageExtracts } from "./pageExtracts.js";
import type { QueriedSelector } from "./queryWatch.js";

/** What loading one page produced. */
export interface PageLoadResult {
  /** Status and type of the page's own document (after following redirects), when it was captured. */
  document: CapturedSummary | null;
  title: string;
  /** The favicon the browser shows for the page (its <link rel=icon>, or /favicon.ico), when it has one. */
  favicon?: string;
  links: string[];
  /** Set when the page could not be loaded at all. */
  error: string | null;
  /** URLs whose bodies were cut off and stored marked WARC-Truncated (only on a page's last attempt). */
  truncated: string[];
  /** The rendered page's text and screenshots, when asked for. */
  extracts?: PageExtracts;
  /** How the page's behaviors ended, when they ran. */
  behaviors?: BehaviorOutcome;
  /** URLs the page's behaviors asked to be crawled (addLink, links autoclick clicked). */
  behaviorLinks?: string[];
  /** The page redirected to the profile's login page (session gone): nothing of the attempt was stored. */
  loggedOut?: { url: string; loginPage: string };
  /** The server answered the page with a rate limit: nothing of the attempt was stored. */
  rateLimited?: RateLimitAnswer;
  /** The WACZ holding the record of the page URL (the page is listed there), when known. */
  documentWacz?: string | null;
  /** The page called the content-check function (--failOnContentCheck): the reason it gave. */
  contentCheckFailed?: string;
  /** --dedupePagesMinDepth: the document's payload was archived already; stored as a revisit, the page not loaded further. */
  duplicate?: boolean;
  /** Everything the attempt captured (the page's requests and their answers; --qa's urn:pageinfo: record). */
  captured?: CapturedSummary[];
  /** What the page's scripts looked for in its document, and whether it holds a match (hybrid capture's learning: queryWatch.ts). */
  queriedSelectors?: QueriedSelector[];
  /** How the page was captured: loaded in Chromium, or fetched and parsed without a browser (--captureMode hybrid). */
  capture?: CaptureKind;
}

export type CaptureKind = "browser" | "static";

export interface LoadOptions {
  conditional?: ConditionalRequest;
  /**
   * The page's last attempt: cut-off bodies are stored (marked truncated) rather than failing the
   * attempt, since no retry is left to get them whole.
   */
  lastAttempt?: boolean;
  /** An earlier attempt at the page failed: what the earlier attempts in this process stored is answered from the archive. */
  retry?: boolean;
  /** --dedupePagesMinDepth (the page is deep enough): a document whose payload is archived already ends the page. */
  skipIfArchived?: boolean;
  /** The sink the page's captures are stored through, even those written after it ended (its seed's bytes); the worker's by default. */
  sink?: ExchangeSink;
}
