import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { outlinksNote, type IndexNote } from "../../../src/dedupe/notes/indexNotes.js";
import { NoteJournal } from "../../../src/dedupe/notes/noteJournal.js";
import { filesWith, fsError } from "../../helpers/logFiles.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const page = (i: number) => `https://site.example/page/${i}`;
const note = (i: number) => outlinksNote(page(i), [page(i + 1)]);

/** Every note the journal gives back, oldest first, applying (shifting) each. */
async function drain(journal: NoteJournal): Promise<string[]> {
  const urls: string[] = [];
  for (let next = await journal.first(); next; next = await journal.first()) {
    urls.push(next.url);
    await journal.shift();
  }
  return urls;
}

const linesOf = (path: string) => readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => (JSON.parse(l) as IndexNote).url);

describe("note journal, an append that fails", () => {
  for (const failing of ["sync", "write"] as const) {
    it(`(its ${failing}) leaves the in-memory counts and the file in agreement: the note is in neither, the next ones follow`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "note-journal-failed-"));
      dirs.push(dir);
      const path = join(dir, "notes-w0.jsonl");
      let calls = 0;
      // The fourth note's sync, or its write, fails; the disk works again after.
      const journal = await NoteJournal.open(path, 2, {
        openFile: filesWith((file) => ({
          datasync: async () => (failing === "sync" && ++calls === 4 ? Promise.reject(fsError("EIO", "input/output error")) : file.datasync()),
          write: async (buffer, offset, length, position) => {
            if (failing === "write" && ++calls === 4) {
              await file.write(buffer, offset, Math.floor(length / 2), position);
              throw fsError("ENOSPC", "no space left on device");
            }
            return file.write(buffer, offset, length, position);
          },
        })),
      });
      for (const i of [0, 1, 2]) await journal.append(note(i));
      await expect(journal.append(note(3))).rejects.toMatchObject({ code: failing === "sync" ? "EIO" : "ENOSPC" });
      expect(journal.size).toBe(3);
      expect(linesOf(path)).toEqual([0, 1, 2].map(page));

      for (const i of [4, 5]) await journal.append(note(i));
      expect(journal.size).toBe(5);
      expect(linesOf(path)).toEqual([0, 1, 2, 4, 5].map(page));
      // A run that takes the journal over finds the same notes.
      expect((await NoteJournal.open(path, 2)).size).toBe(5);
      expect(await drain(journal)).toEqual([0, 1, 2, 4, 5].map(page));
    });
  }
});
