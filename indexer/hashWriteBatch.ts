// One import batch of hash entries as the one script call that writes it, in Redis protocol (RESP) bytes
// written straight into a reusable buffer, one string write per line:
//   EVAL <IMPORT_LINES_LUA> 2 h:<crawlId> allhashes <crawlId> <digest> <entry> ...
// Both rules are order-independent: in h:<crawlId> the entry of the WACZ latest in the crawl's
// list wins (within one WACZ its last line, as a clean run in manifest order had it); in allhashes a payload
// no crawl holds yet is taken, and the others are handed back (digest, holder) for the crawl order to decide
// (src/dedupe/payloadOwnership.ts). Hand-made bytes: 1,000 ioredis arguments per batch would cost the importer
// more than writing the protocol itself. ioredis still sends it (RawCommand): the same connection and reply
// queue as the import's other calls, so they run in order, and a reconnect resends it like any command.
// RESP is length-prefixed, so any digest or URL goes through as it is.
// No string per entry outlives its line, and the buffers are a fixed set (a batch is refilled only once
// Redis has answered it), so the importer's memory stays flat however many lines go through it.
import { Command, Redis } from "ioredis";
import { formatHashEntry, type HashEntry, type DedupeRedis, type HeldDigest } from "../src/dedupe/index.js";

// KEYS: h:<crawl>, allhashes; ARGV: crawl, then digest/entry pairs. Returns digest/holder pairs of the
// payloads another crawl holds in allhashes. HSETNX first: a payload new to both hashes (nearly every line)
// costs the two calls a plain HSET and HSETNX would; only a payload already there is read and compared.
const IMPORT_LINES_LUA = `local crawl = ARGV[1]
local held = {}
for i = 2, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 0 then
    local own = redis.call('HGET', KEYS[1], ARGV[i])
    if own ~= ARGV[i + 1] and (tonumber(string.match(own, '^(%d+) ')) or -1) <= tonumber(string.match(ARGV[i + 1], '^(%d+) ')) then
      redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
    end
  end
  if redis.call('HSETNX', KEYS[2], ARGV[i], crawl) == 0 then
    local holder = redis.call('HGET', KEYS[2], ARGV[i])
    if holder ~= crawl then held[#held + 1] = ARGV[i]; held[#held + 1] = holder end
  end
end
return held`;

const INITIAL_BYTES = 128 * 1024;

/** A command whose protocol bytes are ready: ioredis writes them as they are and handles the reply. */
class RawCommand extends Command {
  constructor(
    name: string,
    private readonly bytes: Buffer,
  ) {
    super(name, [], { replyEncoding: "utf8" });
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

/** Protocol bytes of one command, built as [reserved head room][arguments...]: the head goes in last. */
class RespBuffer {
  private buffer = Buffer.allocUnsafe(INITIAL_BYTES);
  used: number;
  args = 0;

  private readonly fixedHead: Buffer;

  /** `leading`: the command's name and first arguments; room is kept before the lines for them and the count. */
  constructor(private readonly leading: string[]) {
    this.fixedHead = Buffer.from(leading.map((v) => `$${Buffer.byteLength(v)}\r\n${v}\r\n`).join(""));
    this.used = this.headRoom();
  }

  /** Append text as UTF-8; returns the bytes written. */
  write(text: string): number {
    if (this.used + 3 * text.length > this.buffer.length) this.grow(this.used + 3 * text.length);
    const written = this.buffer.write(text, this.used, "utf8");
    this.used += written;
    return written;
  }

  /** Take back the last `bytes` bytes (a line to be written again). */
  unwrite(bytes: number): void {
    this.used -= bytes;
  }

  /** The whole command, head included; valid until the buffer is refilled. */
  command(): Buffer {
    const count = Buffer.from(`*${this.leading.length + this.args}\r\n`);
    const start = this.headRoom() - this.fixedHead.length - count.length;
    count.copy(this.buffer, start);
    this.fixedHead.copy(this.buffer, start + count.length);
    return this.buffer.subarray(start, this.used);
  }

  reset(): void {
    this.used = this.headRoom();
    this.args = 0;
  }

  /** Room for the fixed arguments and an argument count of up to 16 digits. */
  private headRoom(): number {
    return this.fixedHead.length + 20;
  }

  private grow(needed: number): void {
    const bigger = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2));
    this.buffer.copy(bigger, 0, 0, this.used);
    this.buffer = bigger;
  }
}

export class HashWriteBatch {
  private readonly lineArgs: RespBuffer;
  lines = 0;
  /** Settles when Redis has answered this batch: only then may it be refilled. */
  busy: Promise<unknown> = Promise.resolve();

  constructor(crawlHashesKey: string, private readonly allHashesKey: string, crawlId: string) {
    this.lineArgs = new RespBuffer(["EVAL", IMPORT_LINES_LUA, "2", crawlHashesKey, allHashesKey, crawlId]);
  }

  add(digest: string, entry: HashEntry): void {
    const value = formatHashEntry(entry);
    // Lengths in UTF-16 units are the byte lengths when the line is ASCII (nearly always): one string
    // and one write per line; otherwise the line is written again with its real byte lengths.
    const line = `$${digest.length}\r\n${digest}\r\n$${value.length}\r\n${value}\r\n`;
    const written = this.lineArgs.write(line);
    if (written !== line.length) {
      this.lineArgs.unwrite(written);
      this.lineArgs.write(`$${Buffer.byteLength(digest)}\r\n${digest}\r\n$${Buffer.byteLength(value)}\r\n${value}\r\n`);
    }
    this.lineArgs.args += 2;
    this.lines += 1;
  }

  /** Send the batch; resolves to the payloads other crawls hold in allhashes (crawlOrder decides those). */
  async send(redis: DedupeRedis): Promise<HeldDigest[]> {
    // The single-node layout is never on a cluster (a cluster always gets the sharded layout).
    if (!(redis instanceof Redis)) throw new Error("HashWriteBatch: the single-node layout needs a single-node connection");
    const held = (await redis.sendCommand(new RawCommand("eval", this.lineArgs.command()))) as string[];
    const result: HeldDigest[] = [];
    for (let i = 0; i < held.length; i += 2) result.push({ key: this.allHashesKey, field: held[i]!, holder: held[i + 1]! });
    return result;
  }

  reset(): void {
    this.lineArgs.reset();
    this.lines = 0;
  }
}
