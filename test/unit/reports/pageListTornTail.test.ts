import { appendFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { filterPagesFile, PageList, type PageEntry } from "../../../src/reports/pageList.js";
import { filesWith, fsError } from "../../helpers/logFiles.js";

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const page = (n: number): PageEntry => ({
  id: `id-${n}`, url: `http://a.test/${n}`, ts: "2026-01-02T03:04:05.000Z", title: `page ${n}`, loadState: 4, status: 200, mime: "text/html", depth: 0, seed: true,
});

/** The pages of a list as packaging reads them (filterPagesFile, every page kept): throws on a line that is not JSON. */
async function packagedUrls(pagesFile: string, dir: string): Promise<string[]> {
  const copy = join(dir, "packaged.jsonl");
  const dropped = await filterPagesFile(pagesFile, copy, async (urls) => urls.map(() => true));
  expect(dropped).toBe(0);
  const [header, ...lines] = readFileSync(copy, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url?: string; format?: string });
  expect(header).toEqual({ format: "json-pages-1.0", id: "pages", title: "All Pages" });
  return lines.map((l) => l.url!);
}

describe("page list after a host crash", () => {
  it("a line torn by the crash is cut off when the list is opened again: the next page is listed on a line of its own", async () => {
    const dir = mkdtempSync(join(tmpdir(), "page-list-torn-"));
    dirs.push(dir);
    const pagesDir = join(dir, "pages");
    const before = new PageList(pagesDir, "coll.wacz");
    for (const n of [1, 2]) await before.add(page(n), "coll.wacz");
    await before.close();
    const { pagesFile } = before.files("coll.wacz");
    // A third page was being appended when the host went down: part of its line, no newline (never synced, never done).
    appendFileSync(pagesFile, JSON.stringify(page(3)).slice(0, 40));

    const after = new PageList(pagesDir, "coll.wacz");
    await after.add(page(4), "coll.wacz");
    await after.close();
    expect(await packagedUrls(pagesFile, dir)).toEqual(["http://a.test/1", "http://a.test/2", "http://a.test/4"]);
  });

  it("a page whose sync failed is not listed; the list, ended and opened again, holds exactly the pages listed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "page-list-sync-"));
    dirs.push(dir);
    let syncs = 0;
    // Syncs: the header's, page 1's, then page 2's fails.
    const list = new PageList(join(dir, "pages"), "coll.wacz", false, null, {
      durable: true,
      openFile: filesWith((file) => ({ datasync: async () => (++syncs === 3 ? Promise.reject(fsError("EIO", "input/output error")) : file.datasync()) })),
    });
    await list.add(page(1), "coll.wacz");
    await expect(list.add(page(2), "coll.wacz")).rejects.toMatchObject({ code: "EIO" });
    await list.add(page(3), "coll.wacz");
    await list.close();
    expect(await packagedUrls(list.files("coll.wacz").pagesFile, dir)).toEqual(["http://a.test/1", "http://a.test/3"]);
  });
});
