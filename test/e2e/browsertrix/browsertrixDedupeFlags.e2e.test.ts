import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, NO_BEHAVIORS, type CliResult } from "../../helpers/cli.js";
import { JobSlots } from "../../helpers/jobSlots.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

// browsertrix-crawler's --dedupePagesMinDepth and --dedupeConcurrent, against a small site on loopback
// whose page /d/c.html changes from one crawl to the next.
//
// Each flag's crawls run as one job queued in beforeAll, two jobs at a time (each on a site and a dedupe
// Redis of its own, so the requests one counts are its own); the tests assert on what the jobs left.

const PAD = `<p>${"archived once, referred to after that. ".repeat(30)}</p>`;
const CSS = `body { margin: 0; }\n/* ${"padding so that the stylesheet is worth a revisit. ".repeat(20)} */\n`;

interface DedupeSite {
  origin: string;
  /** Paths requested under /d/ since the last reset. */
  requests: string[];
  /** Bumped to change /d/c.html. */
  version: number;
  close(): Promise<void>;
}

/** The site; `small`: only the seed and one page it links to (with their stylesheets). */
async function startDedupeSite(small = false): Promise<DedupeSite> {
  const page = (title: string, links: string[], css?: string) =>
    `<!doctype html><html><head><title>${title}</title>${css ? `<link rel="stylesheet" href="${css}">` : ""}</head><body><h1>${title}</h1>` +
    `${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}${PAD}</body></html>`;
  const site: DedupeSite = { origin: "", requests: [], version: 1, close: async () => undefined };
  const routes: Record<string, () => [string, string]> = {
    "/d/": () => ["text/html", page("seed", small ? ["/d/a.html"] : ["/d/a.html", "/d/b.html", "/d/c.html"], "/d/seed.css")],
    "/d/a.html": () => ["text/html", page("a", small ? [] : ["/d/a-child.html"], "/d/a.css")],
    "/d/b.html": () => ["text/html", page("b", ["/d/b-child.html"])],
    "/d/c.html": () => ["text/html", page(`c, version ${site.version}`, ["/d/c-child.html"], "/d/c.css")],
    "/d/a-child.html": () => ["text/html", page("a-child", [])],
    "/d/b-child.html": () => ["text/html", page("b-child", [])],
    "/d/c-child.html": () => ["text/html", page("c-child", [])],
    "/d/seed.css": () => ["text/css", CSS + "/* seed */"],
    "/d/a.css": () => ["text/css", CSS + "/* a */"],
    "/d/c.css": () => ["text/css", CSS + "/* c */"],
  };
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path.startsWith("/d/")) site.requests.push(path);
    const route = routes[path];
    if (!route) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      return;
    }
    const [type, body] = route();
    res.writeHead(200, { "content-type": type, "content-length": Buffer.byteLength(body) }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  site.origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  site.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return site;
}

let site: DedupeSite;
/** The --dedupeConcurrent crawls' site: the other crawls count their requests exactly. */
let own: DedupeSite;
let redis: TestRedis;
let cwd: string;

const typeOf = (r: RawRecord) => r.headers.get("warc-type");
const target = (r: RawRecord) => r.headers.get("warc-target-uri")!;
const collectionDir = (name: string) => join(cwd, "collections", name);
function recordsOf(name: string): RawRecord[] {
  const archive = join(collectionDir(name), "archive");
  return readdirSync(archive).filter((f) => f.endsWith(".warc.gz")).sort().flatMap((f) => readWarcRecords(join(archive, f)));
}
/** The path of each captured URL under /d/, by the type of its record (response or revisit). */
function capturesOf(name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of recordsOf(name).filter((x) => ["response", "revisit"].includes(typeOf(x)!))) {
    const url = new URL(target(r));
    if (url.origin === site.origin && url.pathname.startsWith("/d/")) out[url.pathname] = typeOf(r)!;
  }
  return out;
}
function pagesOf(name: string): string[] {
  const dir = join(collectionDir(name), "pages");
  return ["pages.jsonl", "extraPages.jsonl"].filter((f) => existsSync(join(dir, f)))
    .flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").slice(1).filter(Boolean).map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname))
    .sort();
}
function skippedOf(name: string): [string, string][] {
  const lines = readFileSync(join(collectionDir(name), "reports", "skippedPages.jsonl"), "utf8").trim().split("\n").slice(1);
  return lines.map((l) => JSON.parse(l) as { url: string; reason: string }).map((s): [string, string] => [new URL(s.url).pathname, s.reason]).sort();
}

function crawlArgs(name: string, dedupeUrl: string, extra: string[] = [], on: DedupeSite = site): string[] {
  return ["--url", `${on.origin}/d/`, "--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ", "--workers", "1",
    "--redisStoreUrl", redis.url, "--redisDedupeUrl", dedupeUrl, ...extra];
}

async function crawl(name: string, dedupeUrl: string, extra: string[] = [], on: DedupeSite = site): Promise<void> {
  on.requests = [];
  const result = await runCli("crawl", crawlArgs(name, dedupeUrl, extra, on));
  if (result.code !== 0) throw new Error(`crawl ${name} failed (${result.code}): ${result.stderr.slice(-2000)}`);
}

/** Start a crawl; resolves once it has crawled its first page, with a function that interrupts it and waits for its exit. */
async function startCrawl(args: string[]): Promise<{ interrupt: () => Promise<void> }> {
  const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stderr.on("data", (d: Buffer) => {
      if (d.toString().includes('"page crawled"')) resolve();
    });
    void exited.then(() => reject(new Error("the crawl ended before its first page")));
  });
  return {
    interrupt: async () => {
      child.kill("SIGINT");
      await exited;
    },
  };
}

/** B's captures of payloads A holds as responses (big enough to dedupe). */
function sharedPayloads(a: RawRecord[], b: RawRecord[]): { record: RawRecord; original: RawRecord }[] {
  const originals = a.filter((r) => typeOf(r) === "response" && httpStatus(r) === 200 && r.payload.length >= 512);
  return b.filter((r) => ["response", "revisit"].includes(typeOf(r)!) && httpStatus(r) === 200).flatMap((record) => {
    const original = originals.find((o) => o.headers.get("warc-payload-digest") === record.headers.get("warc-payload-digest"));
    return original ? [{ record, original }] : [];
  });
}

/** --dedupePagesMinDepth: a full crawl, then two with the flag as /d/c.html changes; the requests each of those two made. */
async function minDepthCrawls(): Promise<{ second: string[]; third: string[] }> {
  await crawl("first", redis.url);
  site.version = 2;
  await crawl("second", redis.url, ["--dedupePagesMinDepth", "1", "--reportSkipped"]);
  const second = [...site.requests];
  site.version = 3;
  await crawl("third", redis.url, ["--dedupePagesMinDepth", "1", "--reportSkipped", "--limit", "2", "--statsFilename", join(cwd, "third.json")]);
  return { second, third: [...site.requests] };
}

/** Without --dedupeConcurrent: crawl A interrupted after its first page (packaged, left uncommitted), then B of the same site. */
async function interruptedThenFull(dedupe: TestRedis): Promise<{ aUncommitted: number; a: RawRecord[]; b: RawRecord[]; allHashOwners: string[] }> {
  await (await startCrawl(crawlArgs("plainA", dedupe.url, [], own))).interrupt();
  const aUncommitted = await dedupe.client.sismember("uncommittedcrawls", "plainA");
  await crawl("plainB", dedupe.url, [], own);
  return { aUncommitted, a: recordsOf("plainA"), b: recordsOf("plainB"), allHashOwners: await dedupe.client.hvals("allhashes") };
}

/** What the dedupe Redis and the archives held at each step of runningThenInterrupted. */
interface ConcurrentRun {
  aWaczWhileRunning: string | null;
  aUncommitted: number;
  a: RawRecord[];
  b: RawRecord[];
  aHashes: string[];
  allHashes: Record<string, string>;
  concurrentCrawls: string[];
  allCrawls: string[];
  bRequires: string[];
  bPackage: { relation?: unknown };
  cancelled: CliResult;
  afterCancel: { allHashes: Record<string, string>; bHashes: string[]; concurrentCrawls: string[] };
}

/**
 * With --dedupeConcurrent: crawl A crawls its seed, then waits 60 s before its next page (--pageExtraDelay),
 * while B runs from start to end; then A is interrupted (packaged, left uncommitted), then cancelled with the indexer.
 */
async function runningThenInterrupted(dedupe: TestRedis): Promise<ConcurrentRun> {
  const running = await startCrawl(crawlArgs("liveA", dedupe.url, ["--dedupeConcurrent", "--pageExtraDelay", "60"], own));
  await crawl("liveB", dedupe.url, ["--dedupeConcurrent"], own);
  const aWaczWhileRunning = await dedupe.client.lindex("c:liveA:wacz", 0);
  await running.interrupt();
  const run = {
    aWaczWhileRunning,
    aUncommitted: await dedupe.client.sismember("uncommittedcrawls", "liveA"),
    a: recordsOf("liveA"),
    b: recordsOf("liveB"),
    aHashes: await dedupe.client.hkeys("h:liveA"),
    allHashes: await dedupe.client.hgetall("allhashes"),
    concurrentCrawls: await dedupe.client.smembers("concurrentcrawls"),
    allCrawls: await dedupe.client.smembers("allcrawls"),
    bRequires: await redis.client.smembers("liveB:reqCrawls"),
    bPackage: JSON.parse((await readZip(join(collectionDir("liveB"), "liveB.wacz"))).get("datapackage.json")!.data.toString()) as { relation?: unknown },
    cancelled: await runCli("indexer", ["--redisDedupeUrl", dedupe.url, "--cancelCrawlId", "liveA"]),
  };
  return {
    ...run,
    afterCancel: { allHashes: await dedupe.client.hgetall("allhashes"), bHashes: await dedupe.client.hkeys("h:liveB"), concurrentCrawls: await dedupe.client.smembers("concurrentcrawls") },
  };
}

/** Run `job` on a dedupe Redis of its own. */
async function onOwnDedupe<T>(job: (dedupe: TestRedis) => Promise<T>): Promise<T> {
  const dedupe = await startTestRedis();
  try {
    return await job(dedupe);
  } finally {
    await dedupe.stop();
  }
}

let jobs: {
  minDepth: ReturnType<typeof minDepthCrawls>;
  plain: ReturnType<typeof interruptedThenFull>;
  concurrent: Promise<ConcurrentRun>;
};

beforeAll(async () => {
  site = await startDedupeSite();
  own = await startDedupeSite(true);
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-dedupe-flags-"));
  const slots = new JobSlots(2);
  jobs = {
    minDepth: slots.run(minDepthCrawls),
    plain: slots.run(() => onOwnDedupe(interruptedThenFull)),
    concurrent: slots.run(() => onOwnDedupe(runningThenInterrupted)),
  };
});

afterAll(async () => {
  // Let the queued crawls end before their sites, Redis and folder go.
  if (jobs) await Promise.allSettled(Object.values(jobs));
  await site?.close();
  await own?.close();
  await redis?.stop();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

describe("--dedupePagesMinDepth", () => {
  it("a page at that depth or deeper whose HTML is archived is a revisit only: not rendered, its links not followed, reported as a duplicate; a changed page is crawled", async () => {
    const { second } = await jobs.minDepth;
    expect(pagesOf("first")).toEqual(["/d/", "/d/a-child.html", "/d/a.html", "/d/b-child.html", "/d/b.html", "/d/c-child.html", "/d/c.html"]);
    // The seed (depth 0) is crawled; a and b (depth 1) and c-child (depth 2) are archived already: their
    // documents alone are fetched, stored as revisits, and nothing of them is loaded or followed.
    expect(pagesOf("second")).toEqual(["/d/", "/d/c.html"]);
    expect(second.sort()).toEqual(["/d/", "/d/a.html", "/d/b.html", "/d/c-child.html", "/d/c.css", "/d/c.html", "/d/seed.css"]);
    expect(capturesOf("second")).toEqual({
      "/d/": "revisit", "/d/seed.css": "revisit", "/d/a.html": "revisit", "/d/b.html": "revisit",
      "/d/c.html": "response", "/d/c.css": "revisit", "/d/c-child.html": "revisit",
    });
    // Each duplicate's revisit points at the first crawl's response.
    const first = recordsOf("first").filter((r) => typeOf(r) === "response");
    for (const revisit of recordsOf("second").filter((r) => typeOf(r) === "revisit")) {
      const original = first.find((r) => target(r) === revisit.headers.get("warc-refers-to-target-uri"));
      expect(original?.headers.get("warc-date")).toBe(revisit.headers.get("warc-refers-to-date"));
      expect(original?.headers.get("warc-payload-digest")).toBe(revisit.headers.get("warc-payload-digest"));
      expect(httpStatus(revisit)).toBe(200);
    }
    expect(skippedOf("second")).toEqual([["/d/a.html", "duplicate"], ["/d/b.html", "duplicate"], ["/d/c-child.html", "duplicate"]]);
  }, 240_000);

  it("--limit counts crawled pages only: duplicates take no place under it", async () => {
    const { third } = await jobs.minDepth;
    // Without the flag --limit 2 would be the seed and a; here a and b are duplicates, c (changed) is the
    // second page crawled, and c-child, taken after that, is past the limit.
    expect(pagesOf("third")).toEqual(["/d/", "/d/c.html"]);
    expect(skippedOf("third")).toEqual([["/d/a.html", "duplicate"], ["/d/b.html", "duplicate"], ["/d/c-child.html", "pageLimit"]]);
    expect(third).not.toContain("/d/c-child.html");
    expect(JSON.parse(readFileSync(join(cwd, "third.json"), "utf8"))).toMatchObject({
      crawled: 2, skippedDuplicates: 2, skippedPageLimit: 1, limit: { max: 2, hit: true }, status: "done", committed: true,
    });
  }, 240_000);
});

describe("--dedupeConcurrent", () => {
  it("without it, a crawl not yet committed is invisible to others: B stores A's payloads again in full", async () => {
    const { aUncommitted, a, b, allHashOwners } = await jobs.plain;
    expect(aUncommitted).toBe(1);
    const shared = sharedPayloads(a, b);
    expect(shared.length).toBeGreaterThan(0);
    for (const { record } of shared) expect(typeOf(record)).toBe("response");
    expect(allHashOwners).not.toContain("plainA");
  }, 240_000);

  it("with it, A's hashes are in the merged index as written: B writes revisits of A's responses; cancelling A takes them out again", async () => {
    const run = await jobs.concurrent;
    expect(run.aUncommitted).toBe(1);
    const shared = sharedPayloads(run.a, run.b);
    expect(shared.length).toBeGreaterThan(0);
    for (const { record, original } of shared) {
      expect(typeOf(record)).toBe("revisit");
      expect(record.headers.get("warc-refers-to-target-uri")).toBe(target(original));
      expect(record.headers.get("warc-refers-to-date")).toBe(original.headers.get("warc-date"));
    }
    // A stays uncommitted once interrupted (its counts are not in allcounts) but its hashes are published.
    for (const digest of run.aHashes) expect(run.allHashes[digest]).toBe("liveA");
    expect(run.concurrentCrawls).toEqual(["liveA"]);
    expect(run.allCrawls).toEqual(["liveB"]);
    // B's relation.requires names A's WACZ.
    expect(run.bRequires).toEqual(["liveA"]);

    expect(run.cancelled.code, run.cancelled.stderr).toBe(0);
    // Exactly B's own originals remain (the holes A left are refilled from committed crawls only).
    expect(Object.keys(run.afterCancel.allHashes).sort()).toEqual(run.afterCancel.bHashes.sort());
    expect(new Set(Object.values(run.afterCancel.allHashes))).toEqual(new Set(["liveB"]));
    expect(run.afterCancel.concurrentCrawls).toEqual([]);
  }, 240_000);

  it("with it, two crawls running at the same time dedupe against each other: B's revisits require A's WACZ, still being written, by name", async () => {
    const run = await jobs.concurrent;
    expect(JSON.parse(run.aWaczWhileRunning!)).toEqual({ filename: "liveA.wacz" });
    const shared = sharedPayloads(run.a, run.b);
    // A crawled its seed only: B's seed and its stylesheet are revisits, B's other page is its own.
    expect(shared.map(({ record }) => new URL(target(record)).pathname).sort()).toEqual(["/d/", "/d/seed.css"]);
    for (const { record, original } of shared) {
      expect(typeOf(record)).toBe("revisit");
      expect(record.headers.get("warc-refers-to-date")).toBe(original.headers.get("warc-date"));
    }
    // As browsertrix-crawler lists a WACZ not finished yet: its name, no hash or size.
    expect(run.bPackage.relation).toEqual({ requires: [{ filename: "liveA.wacz", crawlId: "liveA" }] });
    expect(run.allCrawls).toEqual(["liveB"]);
  }, 240_000);
});
