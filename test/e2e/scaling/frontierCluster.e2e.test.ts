// Crawl state on a real 3-node Redis Cluster (issue 29 item 2): two crawler processes share one crawl of
// three loopback sites (three hosts: three frontier shards, most likely on different nodes) with
// --redisStoreUrl naming one cluster node; the node holding the crawl-wide slot is restarted mid-crawl.
// Every page is crawled exactly once. Before, such a crawl crawled nothing ("EXECABORT ... CROSSSLOT").
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { startLocalCluster, type LocalCluster } from "../../../bench/lib/localCluster.js";
import { connectDedupeIndex } from "../../../src/dedupe/connectIndex.js";
import type { DedupeRedis } from "../../../src/dedupe/indexLayout.js";
import { shardOf } from "../../../src/frontier/frontierEntry.js";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";
import { resetCluster } from "../../helpers/dedupeCluster.js";
import { httpStatus, readWarcRecords } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

const PAGES_PER_SITE = 12;
const CRAWL = "clustered";
let sites: GeneratedSite[];
let cluster: LocalCluster;
let client: DedupeRedis;
let cwd: string;

beforeAll(async () => {
  sites = await Promise.all([0, 1, 2].map(() => startGeneratedSite(PAGES_PER_SITE)));
  cluster = await startLocalCluster(3);
  client = await connectDedupeIndex(cluster.url, "test cluster");
  // A small dedupe index (256 shards): its whole-crawl steps stay quick on a loaded machine.
  await resetCluster(client as Cluster, 2);
  cwd = mkdtempSync(join(tmpdir(), "frontier-cluster-"));
}, 120_000);

afterAll(async () => {
  client?.disconnect();
  await Promise.all((sites ?? []).map((s) => s.close()));
  await cluster?.stop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

function startCrawler(): { child: ChildProcess; done: Promise<number | null>; crawled: () => number; stderr: () => string } {
  const seeds = sites.flatMap((s) => ["--url", `${s.url}/page/0.html`]);
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", ...seeds, "--crawlId", CRAWL, "--collection", CRAWL, "--cwd", cwd, ...NO_BEHAVIORS,
    "--redisStoreUrl", cluster.url, "--redisDedupeUrl", cluster.url, "--generateWACZ", "--workers", "2", "--netIdleWait", "1",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let crawled = 0;
  child.stderr!.on("data", (d: Buffer) => {
    const text = d.toString();
    stderr += text;
    crawled += text.split('"message":"page crawled"').length - 1;
  });
  const done = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, done, crawled: () => crawled, stderr: () => stderr };
}

/** The master node (index into cluster.ports) serving a key. */
async function nodeOf(key: string): Promise<number> {
  const slot = (await client.call("CLUSTER", "KEYSLOT", key)) as number;
  const ranges = (await client.call("CLUSTER", "SLOTS")) as [number, number, [string, number]][];
  const range = ranges.find(([from, to]) => slot >= from && slot <= to)!;
  return cluster.ports.indexOf(range[2][1]);
}

describe("crawl state on a 3-node Redis Cluster", () => {
  it("two processes crawl every page of three hosts exactly once; a node restarted mid-crawl is survived", async () => {
    const keys = crawlStateKeys(CRAWL, true);
    const crawlWideNode = await nodeOf(keys.status);
    const shards = new Set(sites.map((s) => shardOf(`${s.url}/`, 32)));
    expect(shards.size).toBeGreaterThan(1);

    const crawlers = [startCrawler(), startCrawler()];
    while (crawlers[0]!.crawled() + crawlers[1]!.crawled() < 6 && crawlers.every((c) => c.child.exitCode === null)) await new Promise((r) => setTimeout(r, 100));
    expect(crawlers.map((c) => c.child.exitCode)).toEqual([null, null]);
    await cluster.restartNode(crawlWideNode, 1000);
    const codes = await Promise.all(crawlers.map((c) => c.done));
    expect(codes, crawlers.map((c) => c.stderr().slice(-1500)).join("\n---\n")).toEqual([0, 0]);
    expect(crawlers.every((c) => c.crawled() > 0)).toBe(true);

    const dir = join(cwd, "collections", CRAWL);
    const listed: string[] = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".wacz"))) {
      const wacz = await readZip(join(dir, file));
      for (const p of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
        listed.push(...(wacz.get(p)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => (JSON.parse(l) as { url: string }).url));
      }
    }
    const expected = sites.flatMap((s) => Array.from({ length: PAGES_PER_SITE }, (_, i) => `${s.url}/page/${i}.html`));
    expect(listed.sort()).toEqual(expected.sort());
    // Each page's document fetched and stored once over both processes (the three sites serve the same
    // bytes: a page of the second site to be stored is a revisit of the first's).
    const records = readdirSync(join(dir, "archive")).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
    const pageResponses = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!) && /\/page\/\d+\.html$/.test(r.headers.get("warc-target-uri")!));
    expect(pageResponses.map((r) => `${httpStatus(r)} ${r.headers.get("warc-target-uri")}`).sort()).toEqual(expected.map((u) => `200 ${u}`).sort());
    expect(crawlers[0]!.crawled() + crawlers[1]!.crawled()).toBe(expected.length);
  }, 300_000);
});
