// The hash entries of one import batch, written straight into a reusable buffer as
// "<digest>\t<entry>\n" (entry: dedupe/keys.ts formatHashEntry), one write per line: no string per
// entry outlives its line (text kept until the batch is sent would hold the decoded index chunks it
// was sliced from), and the buffers in flight are a fixed set, so the importer's memory stays flat
// however many lines go through it.
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
    // One string and one native write per line (two writes cost a third more).
    const line = `${digest}\t${formatHashEntry(entry)}\n`;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (this.used + 3 * line.length > this.buffer.length) this.grow(this.used + 3 * line.length);
    this.used += this.buffer.write(line, this.used, "utf8");
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
