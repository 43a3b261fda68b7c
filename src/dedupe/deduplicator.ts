import { errorMessage } from "../log/logger.js";
import { ThrottledWarning } from "../log/throttledWarning.js";
import type { OwnWacz } from "./dependencies.js";
import type { DedupeIndex, OriginalCapture } from "./dedupeIndex.js";
import { captureCounts, captureKind, isIndexablePayload } from "./captureRule.js";
import { warcDateToDigits } from "../archive/warcDate.js";

/**
 * Payloads under this size stay full responses by default: a revisit record (WARC headers plus the HTTP
 * headers) is about as large as such a response, so deduping them saves nothing and adds a dependency.
 */
export const DEFAULT_DEDUPE_MIN_SIZE = 512;

/** Where a written record landed, as the dedupe index needs it. */
export interface RecordPlacement {
  /** WARC-Type as written (response, revisit): whether it counts is decided by captureKind. */
  warcType: string;
  url: string;
  /** WARC-Date as written. */
  date: string;
  /** Record length in the WARC. */
  length: number;
  /** The WACZ this record is packaged into (its index is null while the dedupe index could not register it). */
  wacz: OwnWacz;
}

/** What to write for a payload: a revisit of an archived original, or the full response. */
export type DedupeDecision =
  | { kind: "revisit"; original: OriginalCapture }
  /** `indexable`: the response becomes an original later revisits may point at. */
  | { kind: "response"; indexable: boolean };

/**
 * Where dedupe decisions are made: response or revisit; and the index notes that follow a written
 * record. It writes no records itself. A decision never throws: when the index cannot answer, the
 * answer is "write the full response" (a revisit is only written against a confirmed original). The
 * notes do throw while the index is away: the capture pipeline keeps them for retries (NoteBacklog).
 */
export class Deduplicator {
  private readonly digestLocks = new Map<string, Promise<unknown>>();
  private readonly unavailable = new ThrottledWarning("dedupe");

  /**
   * @param isOwnWacz whether a WACZ of this crawl is this writer's own: a revisit may point into it even
   *   before it is packaged, since this writer packages its WACZ files in order.
   */
  constructor(
    private readonly index: DedupeIndex,
    private readonly minSize = DEFAULT_DEDUPE_MIN_SIZE,
    private readonly isOwnWacz: (filename: string) => Promise<boolean> = async () => false,
  ) {}

  /**
   * Run `work` for a digest while no other exchange of the same digest is in progress in this process,
   * so the second of two identical payloads sees the first one's index entry.
   */
  async withDigestLock<T>(digest: string, work: () => Promise<T>): Promise<T> {
    const previous = this.digestLocks.get(digest) ?? Promise.resolve();
    const current = previous.catch(() => undefined).then(work);
    this.digestLocks.set(digest, current);
    try {
      return await current;
    } finally {
      if (this.digestLocks.get(digest) === current) this.digestLocks.delete(digest);
    }
  }

  /** Response or revisit, for a payload of this status and size. */
  async decide(digest: string, status: number, payloadSize: number): Promise<DedupeDecision> {
    const original = this.isEligible(status, payloadSize) ? await this.findOriginal(digest) : null;
    return original ? { kind: "revisit", original } : { kind: "response", indexable: this.isIndexable(status, payloadSize) };
  }

  /** Successful, non-empty payloads go into the index (the indexer, reading CDX, does the same). */
  isIndexable(status: number, payloadSize: number): boolean {
    return isIndexablePayload(status, payloadSize === 0);
  }

  /** Of those, payloads of at least the minimum size are looked up and may become revisits. */
  isEligible(status: number, payloadSize: number): boolean {
    return this.isIndexable(status, payloadSize) && payloadSize >= this.minSize;
  }

  /**
   * The original a revisit may point at, or null: write the full response. A revisit must resolve to a
   * WACZ its own WACZ can list in relation.requires, with that file's hash and size. So the original
   * must be in a packaged WACZ, or in one of this writer's own (packaged before the revisit's WACZ).
   * Another writer's WACZ of this crawl that is still being written can be listed by no one yet (and two
   * writers pointing into each other's unfinished files could never both be hashed): store in full. With
   * --dedupeConcurrent, another crawl's unfinished WACZ is taken, and required by name only.
   */
  async findOriginal(digest: string): Promise<OriginalCapture | null> {
    try {
      const original = await this.index.lookup(digest);
      if (!original || original.waczFinished) return original;
      // --dedupeConcurrent: another crawl's WACZ still being written may be required by name only (dependencies.ts).
      if (this.index.concurrent && original.crawlId !== this.index.crawlId && original.waczFilename) return original;
      if (original.crawlId === this.index.crawlId && original.waczFilename && (await this.isOwnWacz(original.waczFilename))) return original;
      return null;
    } catch (err) {
      this.logFailure("lookup failed; writing the full response", err);
      return null;
    }
  }

  /** Index a written response (its hash entry, if indexable, and the counts). Throws while the index is away: see NoteBacklog. */
  async noteResponse(digest: string, response: RecordPlacement & { wacz: { index: number } }, indexable: boolean): Promise<void> {
    if (indexable) {
      await this.index.addOriginal(digest, {
        waczIndex: response.wacz.index,
        date: warcDateToDigits(response.date),
        url: response.url,
        size: response.length,
      });
    }
    await this.index.addCounts(captureCounts(captureKind(response.warcType, response.url)));
  }

  /** Count a written revisit. Throws while the index is away: see NoteBacklog. */
  async noteRevisit(original: OriginalCapture, revisit: RecordPlacement): Promise<void> {
    await this.index.addCounts(captureCounts(captureKind(revisit.warcType, revisit.url), original.size - revisit.length));
  }

  private logFailure(message: string, err: unknown): void {
    // The crawl goes on; one line every few seconds is enough while the index is away.
    this.unavailable.warn(`dedupe index unavailable: ${message}`, { error: errorMessage(err) });
  }
}
