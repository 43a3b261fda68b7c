import type { CDPSession, Protocol } from "puppeteer-core";
import { readStoredResponse, type RecordPlacement, type StoredResponse } from "../../archive/storedRecord.js";
import { errorMessage, logger } from "../../log/logger.js";
import { withTimeout } from "../../util/deadline.js";
import { RecentlyUsed } from "../../util/recentlyUsed.js";

/** Where an attempt stored a URL's response, and what a later attempt needs to answer with it. */
export interface StoredAnswer extends RecordPlacement {
  /** The WACZ the record goes into (a page whose document it is is listed there). */
  wacz: string;
  /** The payload's size as stored (decoded): large ones are not read back into memory. */
  size: number;
}

/** Pages whose attempts' records are remembered at once in a process; the least recently attempted goes first. */
const MAX_PAGES = 256;
/** URLs remembered per page: a page that loads more has the rest fetched again on a retry. */
const MAX_URLS_PER_PAGE = 5000;
/** Payloads larger than this are fetched again rather than read into memory and handed over whole through CDP. */
const MAX_SERVED_BYTES = 32 * 1024 * 1024;
/** How long reading a record back, and handing it to the browser, may take before the request goes to the network. */
const READ_DEADLINE_MS = 5000;
const FULFILL_DEADLINE_MS = 10_000;
/** Headers that describe the stored bytes' transfer, not the payload handed back (as responseBody.ts hands bodies back). */
const TRANSFER_HEADERS = new Set(["content-encoding", "content-length", "transfer-encoding", "x-orig-content-encoding", "x-orig-content-length", "x-orig-transfer-encoding"]);

/**
 * What the attempts of a page stored, by URL, kept from one attempt to its retries in this process (a retry taken by
 * another process fetches everything again). Bounded in pages and in URLs per page; a page is forgotten once it is
 * settled for good (crawled, skipped, failed for the last time).
 */
export class EarlierAttempts {
  private readonly pages = new RecentlyUsed<string, PageStores>(MAX_PAGES);

  /** The page's records, remembered so far (none on its first attempt); the page becomes the most recent. */
  of(pageUrl: string): PageStores {
    const stores = this.pages.get(pageUrl) ?? new PageStores();
    this.pages.set(pageUrl, stores);
    return stores;
  }

  forget(pageUrl: string): void {
    this.pages.delete(pageUrl);
  }

  /** Pages remembered now (for tests and the debug log). */
  get size(): number {
    return this.pages.size;
  }
}

/** One page's stored responses by URL. */
export class PageStores {
  private readonly byUrl = new Map<string, StoredAnswer>();

  /** A response stored for `url`; only a whole success is ever answered from its record (see servable). */
  remember(url: string, status: number, answer: StoredAnswer): void {
    if (!servable(status)) return;
    if (this.byUrl.size >= MAX_URLS_PER_PAGE && !this.byUrl.has(url)) return;
    this.byUrl.set(url, answer);
  }

  /** What a paused request may be answered with: a GET of a whole resource an attempt stored, not too large. */
  answerFor(request: Protocol.Network.Request): StoredAnswer | null {
    if (request.method !== "GET" || Object.keys(request.headers).some((name) => name.toLowerCase() === "range")) return null;
    const stored = this.byUrl.get(request.url);
    return stored && stored.size <= MAX_SERVED_BYTES ? stored : null;
  }

  get size(): number {
    return this.byUrl.size;
  }
}

/**
 * Answer a request paused before it is sent with the response an earlier attempt of its page stored: the stored
 * status and headers (minus those of the stored bytes' encoding and length) and the payload decoded, as the browser
 * would have got it. Null when the record cannot be read (a file rolled over and moved, packaged, cut) or holds no
 * payload (a revisit), or is no whole success (a redirect, an error), or the browser would not take it: then the request
 * goes to the network as any other.
 */
export async function answerFromStored(cdp: CDPSession, event: Protocol.Fetch.RequestPausedEvent, stored: StoredAnswer): Promise<StoredResponse | null> {
  let response: StoredResponse | null;
  try {
    response = await withTimeout(readStoredResponse(stored), READ_DEADLINE_MS, `the stored record was not read within ${READ_DEADLINE_MS / 1000}s`);
  } catch (err) {
    logger.debug("capture", "the response an earlier attempt stored cannot be read back: fetched again", { url: event.request.url, path: stored.path, offset: stored.offset, error: errorMessage(err) });
    return null;
  }
  if (!response || !servable(response.status)) return null;
  const responseHeaders = response.headers.filter(([name]) => !TRANSFER_HEADERS.has(name.toLowerCase())).map(([name, value]) => ({ name, value }));
  try {
    await withTimeout(
      cdp.send("Fetch.fulfillRequest", {
        requestId: event.requestId,
        responseCode: response.status,
        ...(response.statusText ? { responsePhrase: response.statusText } : {}),
        responseHeaders,
        body: Buffer.from(response.payload).toString("base64"),
      }),
      FULFILL_DEADLINE_MS,
      `the browser did not take the stored response within ${FULFILL_DEADLINE_MS / 1000}s`,
    );
  } catch (err) {
    logger.debug("capture", "the browser did not take the response an earlier attempt stored: fetched again", { url: event.request.url, error: errorMessage(err) });
    return null;
  }
  return response;
}

/**
 * Only a whole success: a redirect is followed from the network (the browser learns there where it leads), and an
 * error (a 503, a 404) is asked again, as a retry is for (a success would be stored beside it); 206 and 304 are never
 * stored whole.
 */
function servable(status: number): boolean {
  return status >= 200 && status < 300 && status !== 206;
}
