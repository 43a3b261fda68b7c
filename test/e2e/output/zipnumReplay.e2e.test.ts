import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { runCli, type CliResult, NO_BEHAVIORS } from "../../helpers/cli.js";
import { detectReplayFailure, replayPage, startReplayServer } from "../../helpers/replay.js";
import { readZip } from "../../helpers/zip.js";

// Enough pages that the CDXJ passes the 50,000-byte threshold and is written as a ZipNum index.
const PAGES = 120;
let site: GeneratedSite;
let cwd: string;
let crawl: CliResult;

beforeAll(async () => {
  site = await startGeneratedSite(PAGES);
  cwd = mkdtempSync(join(tmpdir(), "crawl-zipnum-"));
  crawl = await runCli("crawl", ["--url", `${site.url}/page/0.html`, "--collection", "big", "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ", "--workers", "3", "--netIdleWait", "2"]);
}, 240_000);

afterAll(async () => {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
});

describe("a crawl large enough for a ZipNum index", () => {
  it("writes index.cdx.gz + index.idx instead of index.cdxj", async () => {
    expect(crawl.code, crawl.stderr.slice(-1500)).toBe(0);
    const wacz = await readZip(join(cwd, "collections", "big", "big.wacz"));
    expect(wacz.has("indexes/index.cdxj")).toBe(false);
    const idx = wacz.get("indexes/index.idx")!.data.toString().trim().split("\n");
    expect(idx[0]).toBe('!meta 0 {"format":"cdxj-gzip-1.0","filename":"index.cdx.gz"}');
    // 120 pages + 120 images + 1 stylesheet = 241 responses, in blocks of 256 lines.
    expect(idx.length - 1).toBe(1);
    expect(wacz.get("indexes/index.cdx.gz")!.data.length).toBeGreaterThan(0);
  });

  it("replays a deep page from the ZipNum-indexed WACZ", async () => {
    const server = await startReplayServer(join(cwd, "collections", "big"));
    try {
      const result = await replayPage(server, { source: "/archives/big.wacz", url: `${site.url}/page/97.html`, waitForText: "Page 97", timeoutMs: 45_000 });
      expect(detectReplayFailure(result.text)).toBeNull();
      expect(result.title).toBe("Page 97");
    } finally {
      await server.close();
    }
  }, 60_000);
});
