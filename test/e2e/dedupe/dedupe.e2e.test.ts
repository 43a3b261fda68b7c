import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFixtureServer, type FixtureServer } from "../../../fixtures/server.js";
import { SEED_PATH, SITE_PAGES } from "../../../fixtures/site-manifest.js";
import { DEFAULT_DEDUPE_MIN_SIZE } from "../../../src/dedupe/deduplicator.js";
import { runCli, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { detectReplayFailure, replayPage, startReplayServer } from "../../helpers/replay.js";
import { httpStatus, readWarcRecords, sha256, type RawRecord } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

let site: FixtureServer;
let redis: TestRedis;
let cwd: string;

const typeOf = (r: RawRecord) => r.headers.get("warc-type");
const collectionDir = (name: string) => join(cwd, "collections", name);
const recordsOf = (name: string) => {
  const archive = join(collectionDir(name), "archive");
  // The archive folder also holds a notes journal (notes-*.jsonl) while index notes wait for the index.
  return readdirSync(archive).filter((f) => f.endsWith(".warc.gz")).sort().flatMap((f) => readWarcRecords(join(archive, f)));
};
const waczOf = (name: string) => join(collectionDir(name), `${name}.wacz`);

function crawlArgs(name: string, extra: string[] = []): string[] {
  return ["--url", site.url + SEED_PATH, "--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ",
    "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url, "--workers", "2", ...extra];
}

/** The counts a crawl's records imply, recomputed from the WARC files alone. */
function expectedCounts(name: string, originals: RawRecord[]): Record<string, string> {
  const records = recordsOf(name);
  const revisits = records.filter((r) => typeOf(r) === "revisit");
  const responses = records.filter((r) => typeOf(r) === "response");
  const conserved = revisits.reduce((sum, v) => {
    const original = [...originals, ...responses].find(
      (o) => typeOf(o) === "response" && o.headers.get("warc-target-uri") === v.headers.get("warc-refers-to-target-uri") &&
        o.headers.get("warc-date") === v.headers.get("warc-refers-to-date"),
    )!;
    return sum + original.length - v.length;
  }, 0);
  return {
    totalUrls: String(responses.length + revisits.length),
    dupeUrls: String(revisits.length),
    conservedSize: String(conserved),
    // Every WACZ of the collection (a resumed crawl writes a second one: the first is sealed).
    totalCrawlSize: String(readdirSync(collectionDir(name)).filter((f) => f.endsWith(".wacz")).reduce((sum, f) => sum + statSync(join(collectionDir(name), f)).size, 0)),
  };
}

beforeAll(async () => {
  site = await startFixtureServer();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-dedupe-"));
  for (const name of ["A", "B"]) {
    const result = await runCli("crawl", crawlArgs(name));
    if (result.code !== 0) throw new Error(`crawl ${name} failed: ${result.stderr.slice(-1500)}`);
  }
}, 240_000);

afterAll(async () => {
  await site.close();
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("dedupe across two crawls of the same site", () => {
  it("writes every repeated payload of B as a revisit resolving to A's response", () => {
    const a = recordsOf("A");
    const b = recordsOf("B");
    const aResponses = a.filter((r) => typeOf(r) === "response");
    let revisits = 0;
    for (const record of b.filter((r) => ["response", "revisit"].includes(typeOf(r)!))) {
      const digest = record.headers.get("warc-payload-digest");
      const original = aResponses.find((r) => r.headers.get("warc-payload-digest") === digest);
      const dedupable = httpStatus(record) === 200 && original && original.payload.length >= DEFAULT_DEDUPE_MIN_SIZE;
      if (!dedupable) {
        expect(typeOf(record), record.headers.get("warc-target-uri")).toBe("response");
        continue;
      }
      revisits += 1;
      expect(typeOf(record), record.headers.get("warc-target-uri")).toBe("revisit");
      expect(record.headers.get("warc-refers-to-target-uri")).toBe(original.headers.get("warc-target-uri"));
      expect(record.headers.get("warc-refers-to-date")).toBe(original.headers.get("warc-date"));
      expect(record.headers.get("warc-refers-to-container")).toBe("file://A.wacz");
      expect(record.payload.length).toBe(0);
    }
    // Every HTML page of 512+ bytes, the scripts and the logo under both URLs.
    expect(revisits).toBeGreaterThanOrEqual(8);
  });

  it("lists A's WACZ in B's relation.requires with its real hash and size; A has no relation", async () => {
    const aPackage = JSON.parse((await readZip(waczOf("A"))).get("datapackage.json")!.data.toString());
    const bPackage = JSON.parse((await readZip(waczOf("B"))).get("datapackage.json")!.data.toString());
    expect(aPackage.relation).toBeUndefined();
    expect(bPackage.relation).toEqual({
      requires: [{ filename: "A.wacz", hash: sha256(readFileSync(waczOf("A"))), size: statSync(waczOf("A")).size, crawlId: "A" }],
    });
  });

  it("keeps exact counts, WACZ lists, dependencies and the merged index", async () => {
    const c = redis.client;
    const aCounts = expectedCounts("A", []);
    const bCounts = expectedCounts("B", recordsOf("A"));
    expect(await c.hgetall("h:A:counts")).toEqual(aCounts);
    expect(await c.hgetall("h:B:counts")).toEqual(bCounts);
    const sum = (f: string) => String(Number(aCounts[f]) + Number(bCounts[f]));
    expect(await c.hgetall("allcounts")).toEqual({
      totalUrls: sum("totalUrls"), dupeUrls: sum("dupeUrls"), conservedSize: sum("conservedSize"), totalCrawlSize: sum("totalCrawlSize"),
    });
    expect((await c.smembers("allcrawls")).sort()).toEqual(["A", "B"]);
    expect(await c.smembers("uncommittedcrawls")).toEqual([]);
    expect((await c.lrange("c:A:wacz", 0, -1)).map((j) => JSON.parse(j))).toEqual([
      { filename: "A.wacz", hash: sha256(readFileSync(waczOf("A"))), size: statSync(waczOf("A")).size },
    ]);
    expect(await c.smembers("B:reqCrawls")).toEqual(["A"]);
    expect(await c.smembers("B:duperefs")).toEqual(["A 0"]);
    expect(await c.smembers("A:reqCrawls")).toEqual([]);
    // Every indexed hash points at A, whose h:A entry names the original response record exactly.
    const aResponses = recordsOf("A").filter((r) => typeOf(r) === "response");
    const allhashes = await c.hgetall("allhashes");
    expect(new Set(Object.values(allhashes))).toEqual(new Set(["A"]));
    for (const [digest, value] of Object.entries(await c.hgetall("h:A"))) {
      const [waczIndex, date, url, size] = value.split(" ");
      const original = aResponses.find((r) => r.headers.get("warc-target-uri") === url)!;
      expect(original.headers.get("warc-payload-digest")).toBe(digest);
      expect(date).toBe(original.headers.get("warc-date")!.replace(/[-:TZ.]/g, ""));
      expect([waczIndex, Number(size)]).toEqual(["0", original.length]);
      expect(allhashes[digest]).toBe("A");
    }
    // B indexes its own full responses too (the small ones it did not dedupe): exactly its 2xx, non-empty ones.
    const bIndexable = recordsOf("B").filter((r) => typeOf(r) === "response" && httpStatus(r) >= 200 && httpStatus(r) < 300 && r.payload.length > 0);
    expect(Object.keys(await c.hgetall("h:B")).sort()).toEqual([...new Set(bIndexable.map((r) => r.headers.get("warc-payload-digest")!))].sort());
  });

  it("replays B's pages from the multi-WACZ set of A and B, and fails without A", async () => {
    const dir = join(cwd, "replay");
    mkdirSync(dir, { recursive: true });
    const resources = ["A", "B"].map((name) => {
      copyFileSync(waczOf(name), join(dir, `${name}.wacz`));
      return { name: `${name}.wacz`, path: `${name}.wacz`, hash: sha256(readFileSync(waczOf(name))), size: statSync(waczOf(name)).size, crawlId: name };
    });
    writeFileSync(join(dir, "both.json"), JSON.stringify({ profile: "multi-wacz-package", resources }));
    const bPages = readFileSync(join(collectionDir("B"), "pages", "extraPages.jsonl"), "utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l));
    const products = bPages.find((p: { url: string }) => p.url.endsWith("/site/products.html"));
    const expected = SITE_PAGES.find((p) => p.path === "/site/products.html")!;
    const server = await startReplayServer(dir);
    try {
      const both = await replayPage(server, { source: "/archives/both.json", url: products.url, waitForText: expected.marker, timeoutMs: 45_000 });
      expect(detectReplayFailure(both.text)).toBeNull();
      expect(both.text).toContain(expected.marker);
      const alone = await replayPage(server, { source: "/archives/B.wacz", url: products.url, timeoutMs: 45_000 });
      expect(detectReplayFailure(alone.text)).not.toBeNull();
      expect(alone.text).not.toContain(expected.marker);
    } finally {
      await server.close();
    }
  }, 120_000);
});

// Independent crawls (C dedupes against A and B; D has a dedupe Redis of its own, and mostly waits out the
// outage's retry budget): side by side.
describe("dedupe keeps exact counts through interruptions and outages", () => {
  it.concurrent("a crawl interrupted and continued does not double-count", async () => {
    const args = crawlArgs("C");
    const interrupted = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"] });
      let seen = 0;
      child.stderr.on("data", (d: Buffer) => {
        seen += d.toString().split('"page crawled"').length - 1;
        // One signal: a graceful stop that packages what it has (a second one would stop at once, unpackaged).
        if (seen >= 4 && !child.killed) child.kill("SIGINT");
      });
      child.on("exit", (code) => resolve(code));
    });
    expect(interrupted).toBe(11);
    expect(await redis.client.sismember("uncommittedcrawls", "C")).toBe(1);
    const second = await runCli("crawl", args);
    expect(second.code, second.stderr.slice(-1500)).toBe(0);
    // The continuation crawled what the interrupted run had left, and only that.
    expect(second.stderr.split('"page crawled"').length - 1 + 4).toBeLessThanOrEqual(SITE_PAGES.length);
    expect(second.stderr.split('"page crawled"').length - 1).toBeGreaterThan(0);
    const merged = [...recordsOf("A"), ...recordsOf("B")];
    expect(await redis.client.hgetall("h:C:counts")).toEqual(expectedCounts("C", merged));
    // The interrupted run's WACZ stays as packaged; the continuation is the next one.
    expect((await redis.client.lrange("c:C:wacz", 0, -1)).map((j) => JSON.parse(j).filename)).toEqual(["C.wacz", "C-2.wacz"]);
    expect(await redis.client.sismember("allcrawls", "C")).toBe(1);
  }, 120_000);

  it.concurrent("with the dedupe Redis stopped mid-crawl for good, every page is archived with full responses and no wrong revisits, and the crawl fails uncommitted (its index notes could not be written)", async () => {
    const dedupe = await startTestRedis();
    const args = ["--url", site.url + SEED_PATH, "--collection", "D", "--cwd", cwd, ...NO_BEHAVIORS, "--redisDedupeUrl", dedupe.url, "--statsFilename", join(cwd, "D.json")];
    const result = await new Promise<number | null>((resolve) => {
      const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"] });
      let stopped = false;
      child.stderr.on("data", (d: Buffer) => {
        if (!stopped && d.toString().includes('"page crawled"')) {
          stopped = true;
          dedupe.server.kill();
        }
      });
      child.on("exit", (code) => resolve(code));
    });
    // Committing would leave the records stored during the outage out of the index: the crawl fails instead,
    // with browsertrix-crawler's "Redis unavailable" code.
    expect(result).toBe(8);
    const stats = JSON.parse(readFileSync(join(cwd, "D.json"), "utf8"));
    expect(stats).toMatchObject({ crawled: SITE_PAGES.length, failed: 0, status: "failed", committed: false });
    const records = recordsOf("D");
    const responses = records.filter((r) => typeOf(r) === "response");
    // Every revisit written (before the outage) points at a response really in this crawl's WARCs.
    for (const revisit of records.filter((r) => typeOf(r) === "revisit")) {
      expect(responses.some((o) => o.headers.get("warc-target-uri") === revisit.headers.get("warc-refers-to-target-uri") &&
        o.headers.get("warc-date") === revisit.headers.get("warc-refers-to-date") &&
        o.headers.get("warc-payload-digest") === revisit.headers.get("warc-payload-digest"))).toBe(true);
    }
    const urls = new Set(records.filter((r) => ["response", "revisit"].includes(typeOf(r)!)).map((r) => r.headers.get("warc-target-uri")));
    expect(urls.size).toBeGreaterThanOrEqual(SITE_PAGES.length);
    await dedupe.stop();
  }, 120_000);
});
