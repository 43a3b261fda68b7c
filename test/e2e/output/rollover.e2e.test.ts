import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { EXPECTED_PAGE_PATHS, SEED_PATH } from "../../../fixtures/site-manifest.js";
import { runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { sha256 } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

let site: FixtureServer;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
const dir = () => join(cwd, "collections", "roll");

beforeAll(async () => {
  site = await startFixtureServer();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-rollover-"));
  crawl = await runCli("crawl", ["--url", site.url + SEED_PATH, "--collection", "roll", "--cwd", cwd, "--generateWACZ",
    "--redisDedupeUrl", redis.url, "--rolloverSize", "6KB"]);
}, 180_000);

afterAll(async () => {
  await site.close();
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("--rolloverSize at WACZ level", () => {
  it("writes several WACZ files, listed in order in c:<crawlId>:wacz with their real hash and size", async () => {
    expect(crawl.code, crawl.stderr.slice(-1500)).toBe(0);
    const wacz = readdirSync(dir()).filter((f) => f.endsWith(".wacz"));
    expect(wacz.length).toBeGreaterThan(2);
    const list = (await redis.client.lrange("c:roll:wacz", 0, -1)).map((j) => JSON.parse(j));
    expect(list.map((e) => e.filename)).toEqual(["roll.wacz", ...Array.from({ length: wacz.length - 1 }, (_, i) => `roll-${i + 2}.wacz`)]);
    for (const entry of list) {
      const path = join(dir(), entry.filename);
      expect(entry).toEqual({ filename: entry.filename, hash: sha256(readFileSync(path)), size: statSync(path).size });
    }
    expect(await redis.client.hget("h:roll:counts", "totalCrawlSize")).toBe(String(list.reduce((sum, e) => sum + e.size, 0)));
  });

  it("points every hash entry at the WACZ that really holds the record, and every page is in exactly one WACZ", async () => {
    const list = (await redis.client.lrange("c:roll:wacz", 0, -1)).map((j) => JSON.parse(j) as { filename: string });
    const indexes = await Promise.all(list.map(async (e) => {
      const zip = await readZip(join(dir(), e.filename));
      const cdx = [...zip.entries()].filter(([name]) => name.startsWith("indexes/")).map(([, d]) => d.data.toString()).join("\n");
      const pages = ["pages/pages.jsonl", "pages/extraPages.jsonl"].flatMap((p) => (zip.get(p)?.data.toString().trim().split("\n").slice(1) ?? []));
      return { cdx, pages: pages.map((l) => new URL(JSON.parse(l).url).pathname + new URL(JSON.parse(l).url).search) };
    }));
    const hashes = await redis.client.hgetall("h:roll");
    expect(Object.keys(hashes).length).toBeGreaterThan(5);
    for (const [digest, value] of Object.entries(hashes)) {
      const [waczIndex, date, url] = value.split(" ");
      const line = indexes[Number(waczIndex)].cdx.split("\n").find((l) => l.includes(`"url":"${url}"`) && l.includes(digest.slice(7)));
      expect(line, `${url} in ${list[Number(waczIndex)].filename}`).toBeDefined();
      expect(line!.split(" ")[1]).toBe(date.slice(0, 14));
    }
    expect(indexes.flatMap((i) => i.pages).sort()).toEqual([...EXPECTED_PAGE_PATHS].sort());
  });
});
