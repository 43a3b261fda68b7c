// The hash entries of one import batch, packed as "<digest>\t<entry>\n" (entry: dedupe/keys.ts
// formatHashEntry) into a reusable buffer. Lines are joined as text and encoded once per batch: one
// native call per batch instead of two per line. The buffers in flight are a fixed set and the text
// lives only until the batch is sent, so the importer's memory stays flat however many lines go
// through it.
import { formatHashEntry, type HashEntry } from "../src/dedupe/keys.js";

const INITIAL_BYTES = 256 * 1024;

export class PackedBatch {
  private buffer = Buffer.allocUnsafe(INITIAL_BYTES);
  private text = "";
  lines = 0;
  /** Settles when Redis has answered the call that carries this batch: only then may it be refilled. */
  busy: Promise<unknown> = Promise.resolve();

  /** A digest or URL holding a separator cannot be packed (only possible through JSON escapes). */
  static canPack(digest: string, url: string): boolean {
    return !/[\t\n]/.test(digest) && !url.includes("\n");
  }

  add(digest: string, entry: HashEntry): void {
    this.text += `${digest}\t${formatHashEntry(entry)}\n`;
    this.lines += 1;
  }

  /** The packed bytes; valid until the batch is refilled. */
  bytes(): Buffer {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    if (3 * this.text.length > this.buffer.length) this.grow(3 * this.text.length);
    return this.buffer.subarray(0, this.buffer.write(this.text, 0, "utf8"));
  }

  reset(): void {
    this.text = "";
    this.lines = 0;
  }

  private grow(needed: number): void {
    this.buffer = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2));
  }
}
