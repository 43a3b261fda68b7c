import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CaptureHistory } from "../../../src/dedupe/captureHistory.js";
import { DedupeIndex } from "../../../src/dedupe/dedupeIndex.js";
import { IndexNoteWriter, outlinksNote, revisitNote, type IndexNote } from "../../../src/dedupe/notes/indexNotes.js";
import { NoteBacklog } from "../../../src/dedupe/notes/noteBacklog.js";
import { NoteJournal } from "../../../src/dedupe/notes/noteJournal.js";
import { connectRedis } from "../../../src/redis/connect.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

/** Records the order notes reach the index in (the real writer does the writing). */
class RecordingWriter extends IndexNoteWriter {
  readonly applied: string[] = [];
  override async apply(note: IndexNote, once: boolean): Promise<void> {
    await super.apply(note, once);
    this.applied.push(note.url);
  }
}

const page = (i: number) => `https://site.example/page/${i}`;
const revisitOf = (i: number) => revisitNote({ warcType: "revisit", url: page(i), date: "2026-01-02T03:04:05Z", length: 100, recordId: `<urn:uuid:${randomUUID()}>` }, 1100);

let dir: string;
beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), "note-journal-"))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("NoteJournal", () => {
  it("keeps at most its window in memory while many more notes are on disk, and gives them back in order", async () => {
    const path = join(dir, "notes-window.jsonl");
    const journal = await NoteJournal.open(path, 10);
    for (let i = 0; i < 250; i++) await journal.append(outlinksNote(page(i), [page(i + 1)]));
    expect(journal.size).toBe(250);
    expect(journal.inMemory).toBe(10);
    expect(readFileSync(path, "utf8").trim().split("\n")).toHaveLength(250);

    const order: string[] = [];
    let peak = 0;
    for (let note = await journal.first(); note; note = await journal.first()) {
      peak = Math.max(peak, journal.inMemory);
      order.push(note.url);
      await journal.shift();
      // Appends while it drains join the end, behind everything on disk.
      if (order.length === 100) await journal.append(outlinksNote(page(250), []));
    }
    expect(peak).toBe(10);
    expect(order).toEqual(Array.from({ length: 251 }, (_, i) => page(i)));
    expect(existsSync(path), "an empty journal is removed").toBe(false);
  });

  it("a reopened journal resumes the notes left in it; a line torn by a kill mid-append is dropped", async () => {
    const path = join(dir, "notes-reopen.jsonl");
    const first = await NoteJournal.open(path, 4);
    for (let i = 0; i < 20; i++) await first.append(revisitOf(i));
    appendFileSync(path, '{"kind":"revisit","id":"torn');
    const reopened = await NoteJournal.open(path, 4);
    expect(reopened.size).toBe(20);
    expect(reopened.inMemory).toBe(4);
    const urls: string[] = [];
    for (let note = await reopened.first(); note; note = await reopened.first()) {
      urls.push(note.url);
      await reopened.shift();
    }
    expect(urls).toEqual(Array.from({ length: 20 }, (_, i) => page(i)));
  });
});

describe("NoteBacklog while the dedupe index is away", () => {
  let redis: TestRedis;
  let dedupe: Redis;
  beforeAll(async () => {
    redis = await startTestRedis(true);
    dedupe = await connectRedis(redis.url, "dedupe index", { failFast: true });
  });
  afterAll(async () => {
    dedupe.disconnect();
    await redis.stop();
  });

  it("journals every note beyond a bounded window, writes them in order once it answers, and a replay counts nothing twice", async () => {
    const path = join(dir, "notes-w0.jsonl");
    const writer = new RecordingWriter(new DedupeIndex(dedupe, "jn"), new CaptureHistory(dedupe, "jn"), async () => 0);
    const backlog = await NoteBacklog.open(path, writer, 16);
    await redis.stopServer();
    const notes = Array.from({ length: 300 }, (_, i) => (i % 2 ? outlinksNote(page(i), [page(i + 1)]) : revisitOf(i)));
    for (const note of notes) {
      await backlog.write(note);
      expect(backlog.inMemory).toBeLessThanOrEqual(16);
    }
    expect(backlog.size).toBe(300);
    expect(backlog.inMemory).toBe(16);
    const journaled = readFileSync(path, "utf8");
    expect(journaled.trim().split("\n").map((l) => (JSON.parse(l) as IndexNote).id)).toEqual(notes.map((n) => n.id));

    await redis.restartServer();
    await backlog.settle(60_000);
    expect(writer.applied).toEqual(notes.map((n) => n.url));
    expect(existsSync(path)).toBe(false);
    const counts = await redis.client.hgetall("h:jn:counts");
    expect(counts).toEqual({ totalUrls: "150", dupeUrls: "150", conservedSize: String(150 * 1000) });
    expect(await redis.client.hlen("o:jn")).toBe(150);

    // A crash between writing the notes and removing the journal: the next run replays all of them.
    writeFileSync(path, journaled);
    await NoteBacklog.replay(path, writer);
    expect(await redis.client.hgetall("h:jn:counts")).toEqual(counts);
    expect(existsSync(path)).toBe(false);
  }, 120_000);
});
