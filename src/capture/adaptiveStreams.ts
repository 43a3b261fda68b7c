import type { CDPSession, Protocol } from "puppeteer-core";
import { bodySize, type Exchange } from "../archive/exchange.js";
import type { BodyLimits } from "../fetch/bodyLimits.js";
import type { FallbackFetcher } from "../fetch/fallbackFetcher.js";
import { logger } from "../log/logger.js";
import { listDash } from "../media/dashManifest.js";
import { listHls } from "../media/hlsPlaylist.js";
import { manifestFormat, type StreamFormat } from "../media/manifestFormat.js";
import { keepOneRendition } from "../media/renditionChoice.js";
import type { StreamListing } from "../media/streamListing.js";
import type { ExchangeSink } from "../pipeline/exchangeSink.js";
import type { ExchangeWork } from "./exchangeWork.js";
import type { StoreFetched } from "./fallbackCaptures.js";
import type { PageAttempt } from "./pageAttempt.js";
import { withTimeout } from "../util/deadline.js";
import { cookieHeader, streamFileHeaders, type ManifestRequest } from "./streamRequestHeaders.js";

/** Files of one stream fetched at once: a player fetches one or two at a time; a server takes a few. */
const FETCHES_PER_STREAM = 4;
/** How long a file the player is loading itself is left to the player's capture before it is fetched here too. */
const PLAYER_LOAD_MS = 15_000;
/** How long the browser's cookies for a file are waited for; past it, the manifest request's Cookie is sent. */
const COOKIES_DEADLINE_MS = 5000;

/** What the capture stores for a manifest the browser is answered with (see AdaptiveStreams.answer). */
export interface ManifestAnswer {
  /** The manifest cut to one rendition: what the browser is served and the archive holds. */
  body: Uint8Array;
  /** The limits it was cut to (WARC-JSON-Metadata: replay cuts it again with them). */
  jsonMetadata: string;
  /** The bytes the server sent, kept beside it. */
  originalBody: Uint8Array;
}

/** One stream of a page: a master playlist or MPD (or a media playlist seen alone) and all it lists. */
interface Stream {
  manifest: string;
  format: StreamFormat;
  rendition: StreamListing["rendition"];
  live: boolean;
  encryption: Set<string>;
  /** Every file listed so far (init and media segments, keys), each fetched once. */
  files: Set<string>;
  /** Which of them are media segments. */
  segments: Set<string>;
  stored: number;
  failed: number;
  /** Files not fetched: the stream reached --maxResourceSize, or the page ended on a live stream. */
  skipped: number;
  bytes: number;
  queue: string[];
  running: number;
  /** The manifest's request: what each file's request headers are made from (capture/streamRequestHeaders.ts). */
  request: ManifestRequest;
}

interface AttemptStreams {
  streams: Map<string, Stream>;
  /** Media playlist URL -> the stream that lists it. */
  owners: Map<string, Stream>;
  /** Playlists read already (a live one is read again each time the player reloads it). */
  read: Set<string>;
}

/**
 * HLS and DASH streams, captured whole in one rendition. When the browser is answered with a manifest that
 * offers several renditions, it gets the manifest cut to one (media/renditionChoice.ts: the one replay asks
 * for), so the page's player plays what the archive will hold; the archive keeps the cut manifest as the
 * response (marked with the limits it was cut to) and the server's bytes beside it. Then every file of that
 * rendition (variant and rendition playlists, init and media segments, AES-128 keys) is fetched outside the
 * browser, as after a 206, not only those the player reached in the page's seconds: a stream's files up to
 * --maxResourceSize in all. A live stream is fetched while its page lasts; each page's end logs what each
 * stream got.
 */
export class AdaptiveStreams {
  private readonly byAttempt = new WeakMap<PageAttempt, AttemptStreams>();
  /** The tab's requests by URL, settled when their load ends: a file the player fetches itself is not fetched twice. */
  private readonly tabLoads = new Map<string, { settled: Promise<void>; settle: () => void }>();
  private readonly loadUrls = new Map<string, string>();
  /** Set once the page has a stream: only then are the tab's loads tracked (a page without one pays nothing per request). */
  private watching = false;

  constructor(
    private readonly cdp: CDPSession,
    private readonly sink: ExchangeSink,
    private readonly fetcher: FallbackFetcher,
    private readonly work: ExchangeWork,
    private readonly store: StoreFetched,
    private readonly limits: BodyLimits,
  ) {
    cdp.on("Network.requestWillBeSent", (event: Protocol.Network.RequestWillBeSentEvent) => {
      if (!this.watching || !/^https?:/.test(event.request.url) || this.tabLoads.has(event.request.url)) return;
      let settle = () => undefined as void;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      this.tabLoads.set(event.request.url, { settled, settle });
      this.loadUrls.set(event.requestId, event.request.url);
    });
    const ended = (event: { requestId: string }) => {
      const url = this.loadUrls.get(event.requestId);
      if (url) this.tabLoads.get(url)?.settle();
      this.loadUrls.delete(event.requestId);
    };
    cdp.on("Network.loadingFinished", ended);
    cdp.on("Network.loadingFailed", ended);
  }

  /** A new page: the tab's earlier loads are no longer its player's. */
  beginPage(): void {
    this.watching = false;
    for (const load of this.tabLoads.values()) load.settle();
    this.tabLoads.clear();
    this.loadUrls.clear();
  }

  /**
   * A response body the browser is about to get: if it is a manifest, read it for the files to fetch and,
   * when it offers a choice of renditions, the answer to serve and store instead; null otherwise.
   */
  async answer(url: string, mime: string, bytes: Uint8Array, requestHeaders: [string, string][], attempt: PageAttempt): Promise<ManifestAnswer | null> {
    const format = manifestFormat(url, mime, bytes);
    if (!format) return null;
    // The player asks for the stream's files after its manifest: from here on its loads are tracked.
    this.watching = true;
    const text = new TextDecoder().decode(bytes);
    const kept = await keepOneRendition(format, text).catch(() => null);
    await this.read(url, format, kept?.text ?? text, requestHeaders, attempt);
    if (!kept) return null;
    return { body: new TextEncoder().encode(kept.text), jsonMetadata: JSON.stringify(kept.limits), originalBody: bytes };
  }

  /** Serve the browser the cut manifest in place of the server's (its length and encoding no longer apply). */
  async serve(cdp: CDPSession, event: Protocol.Fetch.RequestPausedEvent, answer: ManifestAnswer): Promise<void> {
    const responseHeaders = (event.responseHeaders ?? []).filter(({ name }) => !/^(content-length|content-encoding|transfer-encoding)$/i.test(name));
    await cdp.send("Fetch.fulfillRequest", {
      requestId: event.requestId,
      responseCode: event.responseStatusCode ?? 200,
      responseHeaders: [...responseHeaders, { name: "Content-Length", value: String(answer.body.length) }],
      body: Buffer.from(answer.body).toString("base64"),
    }).catch(() => undefined);
  }

  /** The page is done: one line per stream saying what the archive got of it. */
  report(attempt: PageAttempt): void {
    for (const stream of this.of(attempt).streams.values()) {
      const complete = stream.stored === stream.files.size && !stream.live;
      logger.info("media", "stream captured", {
        page: attempt.pageUrl,
        manifest: stream.manifest,
        format: stream.format,
        rendition: stream.rendition ? `${stream.rendition.width}x${stream.rendition.height}` : null,
        bandwidth: stream.rendition?.bandwidth ?? null,
        segments: stream.segments.size,
        files: stream.files.size,
        stored: stream.stored,
        bytes: stream.bytes,
        complete,
        ...(stream.live ? { live: true, cut: "the page's end: a live stream lists only its current window" } : {}),
        ...(stream.failed ? { failed: stream.failed } : {}),
        ...(stream.skipped ? { skipped: stream.skipped } : {}),
        ...(stream.encryption.size ? { encrypted: [...stream.encryption] } : {}),
      });
    }
  }

  private of(attempt: PageAttempt): AttemptStreams {
    let streams = this.byAttempt.get(attempt);
    if (!streams) this.byAttempt.set(attempt, (streams = { streams: new Map(), owners: new Map(), read: new Set() }));
    return streams;
  }

  /** A manifest's text (as the player gets it): what it lists is queued for fetching. */
  private async read(url: string, format: StreamFormat, text: string, requestHeaders: [string, string][], attempt: PageAttempt): Promise<void> {
    const state = this.of(attempt);
    const stream = state.owners.get(url) ?? state.streams.get(url) ?? this.open(state, url, format, requestHeaders);
    if (state.read.has(url) && !stream.live) return;
    state.read.add(url);
    let listing: StreamListing;
    try {
      listing = await (format === "hls" ? listHls(text, url) : listDash(text, url));
    } catch (err) {
      logger.warn("media", "manifest not readable: only what the player fetches is archived", { url, error: String(err) });
      return;
    }
    stream.rendition ??= listing.rendition;
    stream.live ||= listing.live;
    for (const segment of listing.segments) stream.segments.add(segment);
    for (const scheme of listing.encryption) {
      if (stream.encryption.has(scheme)) continue;
      stream.encryption.add(scheme);
      logger.warn("media", "encrypted stream: recorded as found (replay needs its keys, a DRM licence is never archived)", { page: attempt.pageUrl, manifest: stream.manifest, encryption: scheme });
    }
    for (const playlist of listing.playlists) {
      state.owners.set(playlist, stream);
      this.fetchPlaylist(stream, playlist, attempt);
    }
    // In playing order: a stream cut at its budget keeps its start, which replays. (Fetched from the last, the
    // site served 25 % less on loopback, where the player buffers far ahead, but a cut stream would keep a hole.)
    for (const file of listing.files) {
      if (stream.files.has(file)) continue;
      stream.files.add(file);
      stream.queue.push(file);
    }
    this.pump(stream, attempt);
  }

  private open(state: AttemptStreams, url: string, format: StreamFormat, requestHeaders: [string, string][]): Stream {
    const stream: Stream = {
      manifest: url, format, rendition: null, live: false, encryption: new Set(), files: new Set(), segments: new Set(), stored: 0, failed: 0, skipped: 0, bytes: 0, queue: [], running: 0, request: { url, headers: requestHeaders },
    };
    state.streams.set(url, stream);
    return stream;
  }

  /** A media playlist the kept rendition needs: read from the browser's answer if it asks first, else fetched here. */
  private fetchPlaylist(stream: Stream, url: string, attempt: PageAttempt): void {
    this.work.background((async () => {
      if (this.of(attempt).read.has(url) || attempt.refetched.has(url)) return;
      attempt.refetched.add(url);
      if (await this.sink.hasStoredResponse(url)) return; // archived by an earlier page, with its segments
      const exchange = await this.fetcher.wholeResource(url, await this.headersFor(stream, url));
      if (!exchange) return;
      if (exchange.body.kind === "bytes" && !this.of(attempt).read.has(url)) {
        const mime = exchange.responseHeaders.find(([n]) => n.toLowerCase() === "content-type")?.[1]?.split(";")[0]?.trim() ?? "";
        if (manifestFormat(url, mime, exchange.body.bytes) === "hls") await this.read(url, "hls", new TextDecoder().decode(exchange.body.bytes), stream.request.headers.slice(), attempt);
      }
      await this.store(exchange, attempt, "a stream's playlist could not be stored");
    })());
  }

  /** Start queued fetches, FETCHES_PER_STREAM at a time. */
  private pump(stream: Stream, attempt: PageAttempt): void {
    while (stream.running < FETCHES_PER_STREAM && stream.queue.length) {
      const url = stream.queue.shift()!;
      stream.running += 1;
      this.work.background(this.fetchFile(stream, url, attempt).finally(() => {
        stream.running -= 1;
        this.pump(stream, attempt);
      }));
    }
  }

  private async fetchFile(stream: Stream, url: string, attempt: PageAttempt): Promise<void> {
    // The stream's budget is --maxResourceSize, as one body's; a live stream is fetched while its page lasts.
    if (stream.bytes >= this.limits.maxResourceSize || (stream.live && attempt.ended)) {
      stream.skipped += 1;
      return;
    }
    // The player asked for it: its capture is awaited (up to PLAYER_LOAD_MS), then it is fetched only if that did not store it.
    const playerLoad = this.tabLoads.get(url);
    if (playerLoad) await Promise.race([playerLoad.settled.then(() => this.work.exchangesSettled()), delay(PLAYER_LOAD_MS)]);
    // Fetched after a 206 by the page's capture already, or archived by an earlier page: stored either way.
    if (attempt.refetched.has(url) || (await this.sink.hasStoredResponse(url))) {
      stream.stored += 1;
      return;
    }
    attempt.refetched.add(url);
    const exchange: Exchange | null = await this.fetcher.wholeResource(url, await this.headersFor(stream, url));
    if (!exchange) {
      stream.failed += 1;
      return;
    }
    const size = bodySize(exchange.body);
    if (await this.store(exchange, attempt, "a stream's file could not be stored")) {
      stream.stored += 1;
      stream.bytes += size;
    } else {
      stream.failed += 1;
    }
  }

  /** What the player would send for one of the stream's files; on the manifest's origin, the browser's cookies for it now. */
  private async headersFor(stream: Stream, url: string): Promise<[string, string][]> {
    let jar: string | null = null;
    if (new URL(url).origin === new URL(stream.request.url).origin) {
      // Cookies set since the manifest was asked for (by its answer, say) count, as they would for the player.
      jar = await withTimeout(this.cdp.send("Network.getCookies", { urls: [url] }), COOKIES_DEADLINE_MS, "no answer").then(({ cookies }) => cookieHeader(cookies), () => null);
    }
    return streamFileHeaders(stream.request, url, jar);
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
