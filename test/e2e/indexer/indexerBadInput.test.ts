import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import yazl from "yazl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeSyntheticWacz } from "../../../bench/lib/syntheticWacz.js";
import { runCli } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { closedPort } from "../../helpers/closedPort.js";

let redis: TestRedis;
let dir: string;

function zip(path: string, entries: Record<string, string>): Promise<void> {
  const z = new yazl.ZipFile();
  for (const [name, text] of Object.entries(entries)) z.addBuffer(Buffer.from(text), name, { compress: false });
  z.end();
  return new Promise((resolve) => z.outputStream.pipe(createWriteStream(path)).on("close", () => resolve()));
}

const lastLine = (stderr: string) => stderr.trim().split("\n").filter((l) => !l.startsWith("{")).pop() ?? "";

beforeAll(async () => {
  redis = await startTestRedis();
  dir = mkdtempSync(join(tmpdir(), "indexer-bad-"));
  await writeSyntheticWacz({ dir, name: "good.wacz", records: 50, seed: "good" });
  writeFileSync(join(dir, "notzip.wacz"), "this is not a zip file\n".repeat(100));
  const datapackage = JSON.stringify({ profile: "data-package", wacz_version: "1.1.1", resources: [] });
  await zip(join(dir, "noindex.wacz"), { "datapackage.json": datapackage, "pages/pages.jsonl": '{"format":"json-pages-1.0","id":"pages"}\n' });
  await zip(join(dir, "truncated.wacz"), {
    "datapackage.json": datapackage,
    "indexes/index.cdxj": 'com,example)/ 20260101000000 {"url":"http://example.com/","mime":"text/html","status":"200","digest":"aa","length":"10","offset":"0","filename":"a.warc.gz"}\ncom,example)/b 2026010100',
  });
  writeFileSync(join(dir, "broken.json"), '{"resources": [');
  writeFileSync(join(dir, "noresources.json"), '{"profile": "multi-wacz-package"}');
  writeFileSync(join(dir, "mixed.json"), JSON.stringify({
    resources: [
      { name: "good.wacz", path: "good.wacz", crawlId: "good" },
      { name: "missing.wacz", path: "missing.wacz", crawlId: "missing" },
      { name: "notzip.wacz", path: "notzip.wacz", crawlId: "notzip" },
      { name: "noindex.wacz", path: "noindex.wacz", crawlId: "noindex" },
      { name: "truncated.wacz", path: "truncated.wacz", crawlId: "truncated" },
      { name: "nopath.wacz", crawlId: "nopath" },
      { path: "broken.json" },
    ],
  }));
});

afterAll(async () => {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("indexer bad input", () => {
  it.each([
    [["--sourceUrl", "broken.json"], 1, /^indexer: .*broken\.json: not valid JSON/],
    [["--sourceUrl", "noresources.json"], 1, /^indexer: .*noresources\.json: manifest has no "resources" list$/],
    [[], 2, /^indexer: give exactly one of --sourceUrl, --commitCrawlId, --cancelCrawlId$/],
    [["--sourceUrl", "x.wacz", "--commitCrawlId", "y"], 2, /give exactly one of/],
    [["--sourceUrl", "x.json", "--force"], 2, /^indexer: --force goes with --remove$/],
    [["--sourceUrl", "x.json", "--bogus"], 2, /unknown option '--bogus'/],
  ])("%j exits %i with one clear line", async (args, code, message) => {
    const resolved = args.map((a) => (/\.(json|wacz)$/.test(a) ? join(dir, a) : a));
    const result = await runCli("indexer", ["--redisDedupeUrl", redis.url, ...resolved]);
    expect(result.code).toBe(code);
    expect(lastLine(result.stderr)).toMatch(message);
  });

  it("an unreachable --redisDedupeUrl fails with one line", async () => {
    const port = await closedPort();
    const result = await runCli("indexer", ["--redisDedupeUrl", `redis://127.0.0.1:${port}/0`, "--sourceUrl", join(dir, "good.wacz")]);
    expect(result.code).toBe(1);
    expect(lastLine(result.stderr)).toMatch(new RegExp(`^indexer: cannot reach dedupe Redis \\(--redisDedupeUrl\\) at redis://127\\.0\\.0\\.1:${port}/0`));
  });

  it("bad entries of a manifest fail one by one, named; the good one is imported; nothing half-written", async () => {
    await redis.client.flushdb();
    const result = await runCli("indexer", ["--redisDedupeUrl", redis.url, "--sourceUrl", join(dir, "mixed.json")]);
    expect(result.code).toBe(3);
    const summary = lastLine(result.stderr);
    expect(summary).toMatch(/^indexer: 6 entries failed \(the others were imported\): /);
    expect(summary).toContain('mixed.json resources[5]: resource has no "path"');
    expect(summary).toMatch(/broken\.json: not valid JSON/);
    expect(summary).toMatch(/missing\.wacz \([^)]*missing\.wacz\): file not found;/);
    expect(summary).toMatch(/notzip\.wacz \([^)]*\): [^;]*not a zip file/);
    expect(summary).toMatch(/noindex\.wacz \([^)]*\): [^;]*has no CDXJ index/);
    expect(summary).toMatch(/truncated\.wacz \([^)]*\): [^;]*(line 2|truncated|malformed)/i);
    // The good WACZ is fully imported; the bad ones left no key behind and can be retried.
    expect(await redis.client.hget("h:good:counts", "totalUrls")).toBe("50");
    expect(await redis.client.smembers("src:d")).toEqual(["good.wacz"]);
    expect(await redis.client.smembers("src:qset")).toEqual(["good.wacz"]);
    const keys = (await redis.client.keys("*")).sort();
    expect(keys.filter((k) => /missing|notzip|noindex|truncated|nopath/.test(k))).toEqual([]);
    expect(await redis.client.smembers("allcrawls")).toEqual(["good"]);
  });
});
