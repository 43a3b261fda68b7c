// One import batch of hash entries as the two commands that write it, in Redis protocol (RESP) bytes
// written straight into reusable buffers, one string write per line:
//   HSET h:<crawlId> <digest> <entry> ...                   h:<crawlId> takes every entry (last wins)
//   EVAL <HSETNX loop> 1 allhashes <crawlId> <digest> ...   the first crawl to index a payload keeps it
// Why native HSET and hand-made bytes: a Lua script that split one packed argument and wrote both hashes
// cost Redis about a tenth more per line (splitting and converting every field into and out of Lua), and
// 1,000 ioredis arguments per batch would cost the importer more than writing the protocol itself. ioredis
// still sends both (RawCommand): the same connection and reply queue as the import's other calls, so
// they run in order, and a reconnect resends them like any command. RESP is length-prefixed, so any
// digest or URL goes through as it is.
// No string per entry outlives its line, and the buffers are a fixed set (a batch is refilled only once
// Redis has answered it), so the importer's memory stays flat however many lines go through it.
import { Command, Redis } from "ioredis";
import { formatHashEntry, type HashEntry, type DedupeRedis } from "../src/dedupe/index.js";

// HSETNX per digest: cheaper in Redis than one HMGET and one HSET of the new digests (whose replies and
// arguments all cross into and out of Lua); atomic, so the first crawl still wins.
const FIRST_CRAWL_WINS_LUA = `local crawl = ARGV[1]
for i = 2, #ARGV do redis.call('HSETNX', KEYS[1], ARGV[i], crawl) end`;

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

  copyFrom(source: RespBuffer, start: number, end: number): void {
    const length = end - start;
    if (this.used + length > this.buffer.length) this.grow(this.used + length);
    source.buffer.copy(this.buffer, this.used, start, end);
    this.used += length;
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
  private readonly hset: RespBuffer;
  private readonly firstWins: RespBuffer;
  lines = 0;
  /** Settles when Redis has answered both commands of this batch: only then may it be refilled. */
  busy: Promise<unknown> = Promise.resolve();

  constructor(crawlHashesKey: string, allHashesKey: string, crawlId: string) {
    this.hset = new RespBuffer(["HSET", crawlHashesKey]);
    this.firstWins = new RespBuffer(["EVAL", FIRST_CRAWL_WINS_LUA, "1", allHashesKey, crawlId]);
  }

  add(digest: string, entry: HashEntry): void {
    const value = formatHashEntry(entry);
    // Lengths in UTF-16 units are the byte lengths when the line is ASCII (nearly always): one string
    // and one write per line; otherwise the line is written again with its real byte lengths.
    const digestArg = `$${digest.length}\r\n${digest}\r\n`;
    const line = `${digestArg}$${value.length}\r\n${value}\r\n`;
    const start = this.hset.used;
    const written = this.hset.write(line);
    let digestBytes = digestArg.length;
    if (written !== line.length) {
      this.hset.unwrite(written);
      const exactDigest = `$${Buffer.byteLength(digest)}\r\n${digest}\r\n`;
      digestBytes = this.hset.write(exactDigest);
      this.hset.write(`$${Buffer.byteLength(value)}\r\n${value}\r\n`);
    }
    this.firstWins.copyFrom(this.hset, start, start + digestBytes);
    this.hset.args += 2;
    this.firstWins.args += 1;
    this.lines += 1;
  }

  /** Send both commands (in this order: allhashes never names an entry h:<crawlId> does not hold yet). */
  send(redis: DedupeRedis): Promise<unknown> {
    // The single-node layout is never on a cluster (a cluster always gets the sharded layout).
    if (!(redis instanceof Redis)) throw new Error("HashWriteBatch: the single-node layout needs a single-node connection");
    return Promise.all([
      redis.sendCommand(new RawCommand("hset", this.hset.command())),
      redis.sendCommand(new RawCommand("eval", this.firstWins.command())),
    ]);
  }

  reset(): void {
    this.hset.reset();
    this.firstWins.reset();
    this.lines = 0;
  }
}
