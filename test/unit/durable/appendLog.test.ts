import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AppendLog } from "../../../src/durable/appendLog.js";
import { filesWith, fsError } from "../../helpers/logFiles.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "append-log-"));
  dirs.push(dir);
  return dir;
}

/** Wait for `done` (a loaded machine takes its time; a fixed sleep would not do). */
async function until(done: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !done(); ) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const line = (i: number) => `{"n":${i},"pad":"${"x".repeat(i * 7)}"}\n`;

describe("append log: checked writes", () => {
  it("a disk that takes a few bytes per write still gets every line whole, in order", async () => {
    const path = join(tempDir(), "log.jsonl");
    let writes = 0;
    const log = await AppendLog.open(path, {
      durable: true,
      openFile: filesWith((file) => ({
        write: (buffer, offset, length, position) => {
          writes += 1;
          return file.write(buffer, offset, Math.min(length, 3), position);
        },
      })),
    });
    const offsets = await Promise.all(Array.from({ length: 20 }, (_, i) => log.append(Buffer.from(line(i)))));
    await log.close();
    const expected = Array.from({ length: 20 }, (_, i) => line(i)).join("");
    expect(readFileSync(path, "utf8")).toBe(expected);
    expect(offsets).toEqual(Array.from({ length: 20 }, (_, i) => Buffer.byteLength(Array.from({ length: i }, (_, j) => line(j)).join(""))));
    expect(writes).toBe(Array.from({ length: 20 }, (_, i) => Math.ceil(Buffer.byteLength(line(i)) / 3)).reduce((a, b) => a + b));
  });

  it("a write the disk takes nothing of is ENOSPC: cut off again, the file ended (every later append rejects), what was synced before kept", async () => {
    const path = join(tempDir(), "log.jsonl");
    let writes = 0;
    const log = await AppendLog.open(path, {
      durable: true,
      openFile: filesWith((file) => ({
        // The third line's write: half of it goes in, then the disk is full.
        write: async (buffer, offset, length, position) => {
          writes += 1;
          if (writes === 3) return file.write(buffer, offset, Math.floor(length / 2), position);
          if (writes === 4) return { bytesWritten: 0 };
          return file.write(buffer, offset, length, position);
        },
      })),
    });
    await log.append(Buffer.from(line(1)));
    await log.append(Buffer.from(line(2)));
    await expect(log.append(Buffer.from(line(3)))).rejects.toMatchObject({ code: "ENOSPC" });
    expect(log.failed).toBe(true);
    expect(readFileSync(path, "utf8")).toBe(line(1) + line(2));
    // The disk has room again: the file stays ended all the same.
    await expect(log.append(Buffer.from(line(4)))).rejects.toMatchObject({ code: "ENOSPC" });
    expect(writes).toBe(4);
    await log.close();
    expect(readFileSync(path, "utf8")).toBe(line(1) + line(2));
  });
});

describe("append log: group sync", () => {
  it("appends made while a sync runs share the next one; each resolves only once a completed sync covers it", async () => {
    const path = join(tempDir(), "log.jsonl");
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    /** Size of the file as each sync began, once that sync completed. */
    const covered: number[] = [];
    const log = await AppendLog.open(path, {
      durable: true,
      openFile: filesWith((file) => ({
        datasync: async () => {
          const size = (await file.stat()).size;
          if (covered.length === 0) await held;
          await file.datasync();
          covered.push(size);
        },
      })),
    });
    const resolved: { i: number; end: number; coveredThen: number }[] = [];
    const appends = Array.from({ length: 20 }, async (_, i) => {
      const bytes = Buffer.from(line(i));
      const offset = await log.append(bytes);
      resolved.push({ i, end: offset + bytes.length, coveredThen: Math.max(0, ...covered) });
    });
    // Every line is written, none counts: the first sync is held.
    await until(() => statSync(path).size === Buffer.byteLength(Array.from({ length: 20 }, (_, i) => line(i)).join("")));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(resolved).toEqual([]);
    release();
    await Promise.all(appends);
    // The held sync covered the first line; the 19 written while it ran shared one more.
    expect(covered).toHaveLength(2);
    expect(resolved.map((r) => r.i)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    for (const r of resolved) expect(r.coveredThen).toBeGreaterThanOrEqual(r.end);
    await log.close();
  });
});

describe("append log: a failed fsync", () => {
  it("ends the file: appends it did not cover reject, later ones too though syncs work again, and close keeps what the last good sync covered", async () => {
    const path = join(tempDir(), "log.jsonl");
    let syncs = 0;
    let failNow = (): void => undefined;
    const failing = new Promise<void>((resolve) => (failNow = resolve));
    const log = await AppendLog.open(path, {
      durable: true,
      openFile: filesWith((file) => ({
        datasync: async () => {
          syncs += 1;
          if (syncs !== 2) return file.datasync();
          await failing;
          throw fsError("EIO", "input/output error");
        },
      })),
    });
    await log.append(Buffer.from(line(1)));
    // The second sync fails, after two more lines were written while it ran.
    const second = log.append(Buffer.from(line(2)));
    await until(() => syncs === 2);
    const third = log.append(Buffer.from(line(3)));
    const fourth = log.append(Buffer.from(line(4)));
    await until(() => readFileSync(path, "utf8") === line(1) + line(2) + line(3) + line(4));
    failNow();
    for (const append of [second, third, fourth]) await expect(append).rejects.toMatchObject({ code: "EIO" });
    expect(log.failed).toBe(true);
    // Syncs would succeed now: the next one must not be trusted to cover what the failed one lost.
    await expect(log.append(Buffer.from(line(5)))).rejects.toMatchObject({ code: "EIO" });
    await expect(log.synced()).rejects.toMatchObject({ code: "EIO" });
    expect(syncs).toBe(2);
    await log.close();
    expect(log.size).toBe(Buffer.byteLength(line(1)));
    expect(readFileSync(path, "utf8")).toBe(line(1));
  });

  it("in a file opened with lines in it, cuts back to those lines, never further", async () => {
    const path = join(tempDir(), "log.jsonl");
    writeFileSync(path, line(1) + line(2));
    const log = await AppendLog.open(path, {
      durable: true,
      openFile: filesWith(() => ({ datasync: () => Promise.reject(fsError("EIO", "input/output error")) })),
    });
    await expect(log.append(Buffer.from(line(3)))).rejects.toMatchObject({ code: "EIO" });
    await expect(log.close()).rejects.toMatchObject({ code: "EIO" });
    expect(readFileSync(path, "utf8")).toBe(line(1) + line(2));
  });

  it("reopened after a failure, the file goes on from what the failed log vouched for", async () => {
    const path = join(tempDir(), "log.jsonl");
    let syncs = 0;
    const log = await AppendLog.open(path, {
      durable: true,
      openFile: filesWith((file) => ({ datasync: async () => (++syncs === 2 ? Promise.reject(fsError("EIO", "input/output error")) : file.datasync()) })),
    });
    await log.append(Buffer.from(line(1)));
    await expect(log.append(Buffer.from(line(2)))).rejects.toMatchObject({ code: "EIO" });
    const reopened = await log.reopen();
    expect(reopened.size).toBe(Buffer.byteLength(line(1)));
    await reopened.append(Buffer.from(line(3)));
    await reopened.close();
    expect(readFileSync(path, "utf8")).toBe(line(1) + line(3));
  });
});

describe("append log: torn tail", () => {
  it("a line log is cut back to its last complete line on open; the next append follows it", async () => {
    const path = join(tempDir(), "log.jsonl");
    writeFileSync(path, line(1) + line(2));
    // What a host crash leaves: part of a line, no newline.
    appendFileSync(path, '{"n":3,"pad":"xx');
    const log = await AppendLog.open(path, { durable: true });
    expect(log.size).toBe(Buffer.byteLength(line(1) + line(2)));
    await log.append(Buffer.from(line(4)));
    await log.close();
    expect(readFileSync(path, "utf8")).toBe(line(1) + line(2) + line(4));
  });

  it("a file holding only a torn line is emptied; one cut by its own rule (a WARC file's whole records) keeps what that rule says", async () => {
    const dir = tempDir();
    const torn = join(dir, "torn.jsonl");
    writeFileSync(torn, '{"n":1');
    const log = await AppendLog.open(torn, { durable: true });
    expect(log.size).toBe(0);
    await log.close();
    expect(statSync(torn).size).toBe(0);

    const records = join(dir, "records.bin");
    writeFileSync(records, Buffer.alloc(100, 1));
    const cut = await AppendLog.open(records, { durable: true, wholeEnd: async () => 64 });
    expect(cut.size).toBe(64);
    await cut.close();
    expect(statSync(records).size).toBe(64);
  });

  it('"new" never opens a file that is there (a WARC name another writer took)', async () => {
    const path = join(tempDir(), "taken.warc.gz");
    writeFileSync(path, "theirs");
    await expect(AppendLog.open(path, { create: "new" })).rejects.toMatchObject({ code: "EEXIST" });
    expect(readFileSync(path, "utf8")).toBe("theirs");
  });
});
