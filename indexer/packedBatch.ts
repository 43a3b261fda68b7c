// The hash entries of one import batch, written straight into a reusable buffer as
// "<digest>\t<entry>\n" (entry: dedupe/keys.ts formatHashEntry): no string per entry outlives its
// line, and the buffers in flight are a fixed set, so the importer's memory stays flat however many
// lines go through it.
import { formatHashEntry, type HashEntry } from "../src/dedupe/keys.js";

const INITIAL_BYTES = 256 * 1024;

export class PackedBatch {
  private buffer = Buffer.allocUnsafe(INITIAL_BYTES);
  private used = 0;
  lines = 0;
  /** Settles when Redis has answered the call that carries this batch: only then may it be refilled. */
  busy: Promise<unknown> = Promise.resolve();

  /** A digest or URL holding a separator cannot be packed (only possible through JSON escapes). */
  static canPack(digest: string, url: string): boolean {
    return !/[\t\n]/.test(digest) && !url.includes("\n");
  }

  add(digest: string, entry: HashEntry): void {
    const text = formatHashEntry(entry);
    const most = 3 * (digest.length + text.length) + 2;
    if (this.used + most > this.buffer.length) this.grow(this.used + most);
    const b = this.buffer;
    let at = this.used;
    at += b.write(digest, at, "utf8");
    b[at++] = 0x09;
    at += b.write(text, at, "utf8");
    b[at++] = 0x0a;
    this.used = at;
    this.lines += 1;
  }

  /** The packed bytes; valid until the batch is refilled. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.used);
  }

  reset(): void {
    this.used = 0;
    this.lines = 0;
  }

  private grow(needed: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2));
    this.buffer.copy(bigger, 0, 0, this.used);
    this.buffer = bigger;
  }
}
