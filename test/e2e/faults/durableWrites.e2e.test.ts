/**
 * Issue 28 item 9: nothing counts as stored that a host crash can take away. A crawl (real Chromium, a
 * redis-server of its own that outlives the crash, as an external Redis would) is SIGKILLed with its
 * browser at a seeded random moment; then the power loss: every WARC file is cut back to what its last
 * completed fdatasync vouched for (the crawler's CRAWLER_TEST_SYNC_LOG), and so is every page list; a file
 * (WARC, `.open` marker, page list) whose name was never synced, by a sync of its folder, is removed. Right
 * then, every exchange the crawl state calls stored, every page done (its record and its page list line)
 * and every dedupe original must be in what is left; and the same command run again must finish a crawl
 * whose WACZ holds each of them, valid, with no record twice.
 * With durable writes off (CRAWLER_TEST_NO_DURABLE_WRITES=1, the writer as it was before item 9) the same
 * check finds exchanges claimed as stored that the crash took away.
 *
 * DURABLE_SEED=<n> reproduces a run (the seed is printed).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { WARCParser } from "warcio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { warcDateToDigits } from "../../../src/archive/warcDate.js";
import { dedupeKeys, parseHashEntry } from "../../../src/dedupe/indexKeys.js";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { processArgs } from "../../../src/util/procfs.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { cutToLastSync, lastSyncedSizes, type CutFile } from "../../helpers/powerLoss.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { seededRandom } from "../../helpers/seededRandom.js";
import { readWarcRecords, sha256 } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

const SEED = Number(process.env.DURABLE_SEED ?? 20261128);
// Twenty pages (and the seed): room for a kill early, mid-way and two thirds in, each with pages left to resume.
const PAGES = 20;
const random = seededRandom(SEED);
/**
 * When each trial kills: once `pages` pages are crawled (early, mid-way, two thirds in) and `delayMs` more
 * have passed; with `inFlight`, at the first moment after that when the writer has bytes on disk that no
 * sync covers yet (a crash then takes something: the trials must show the cut lands on nothing claimed).
 * With `reboot`, the crawl is resumed as after the host came back: another boot (CRAWLER_TEST_PID_NAMESPACE
 * gives the resumed crawler another locality), the dead crawler's heartbeat long expired, and the WARC
 * files' `.open` markers (never synced) holding what they held when first written: a size of 0.
 */
const KILLS = [
  { pages: 1 + Math.floor(random() * 3), delayMs: Math.floor(random() * 400), inFlight: false, reboot: false },
  { pages: 4 + Math.floor(random() * 5), delayMs: Math.floor(random() * 400), inFlight: true, reboot: false },
  { pages: 9 + Math.floor(random() * 5), delayMs: Math.floor(random() * 400), inFlight: true, reboot: true },
];
const ROOT = join(import.meta.dirname, "../../..");

let site: FaultySite;
let redis: TestRedis;
let cwd: string;
const started: ChildProcess[] = [];
const clients: Redis[] = [];
const trials: { crawlId: string; killedAfterPages: number; cutBytes: number; pageListBytesCut: number; filesRemoved: string[]; storedAtKill: number }[] = [];
beforeAll(async () => {
  site = await startFaultySite(PAGES, {});
  redis = await startTestRedis(true);
  cwd = mkdtempSync(join(tmpdir(), "crawl-durable-"));
  console.log(`durable writes suite: DURABLE_SEED=${SEED}, kills ${JSON.stringify(KILLS)}`);
});
afterAll(async () => {
  console.log(`durable writes trials: ${JSON.stringify(trials)}`);
  for (const client of clients) client.disconnect();
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await site.close();
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
});

interface Crawler {
  child: ChildProcess;
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  crawled: () => number;
  log: () => string;
}

/** Each crawl its own database (crawl state and dedupe index): no crawl's revisits point into another's archive. */
const redisUrlOf = (db: number) => redis.url.replace(/\/\d+$/, `/${db}`);

function startCrawler(crawlId: string, db: number, env: Record<string, string> = {}): Crawler {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", `${site.url}/`, "--crawlId", crawlId, "--collection", crawlId, "--cwd", cwd,
    "--redisStoreUrl", redisUrlOf(db), "--redisDedupeUrl", redisUrlOf(db), "--generateWACZ", "--workers", "2", ...NO_BEHAVIORS,
  ], { cwd: ROOT, env: { ...process.env, CRAWLER_TEST_SYNC_LOG: syncLogOf(crawlId), ...env }, stdio: ["ignore", "ignore", "pipe"] });
  started.push(child);
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, ended, crawled: () => stderr.split('"message":"page crawled"').length - 1, log: () => stderr };
}

const syncLogOf = (crawlId: string) => join(cwd, `${crawlId}.sync.log`);
const archiveOf = (crawlId: string) => join(cwd, "collections", crawlId, "archive");

async function until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The crawler's own child processes that are Chromium (the browser; its zygotes and renderers are its children). */
function browserPidsOf(pid: number): number[] {
  return readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((p) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid && (processArgs(p) ?? []).some((a) => a.startsWith("--user-data-dir="));
    } catch {
      return false;
    }
  });
}

/** Bytes of the crawl's WARC files that no completed sync covers yet: what a crash right now would take. */
function unsyncedBytes(crawlId: string): number {
  const synced = lastSyncedSizes(syncLogOf(crawlId));
  const files = existsSync(archiveOf(crawlId)) ? readdirSync(archiveOf(crawlId)).filter((f) => f.endsWith(".warc.gz")) : [];
  return files.reduce((sum, f) => sum + Math.max(0, statSync(join(archiveOf(crawlId), f)).size - (synced.get(f) ?? 0)), 0);
}

/** SIGKILL the crawler mid-crawl at the trial's moment (see KILLS); its browser must go with it. */
async function killMidCrawl(crawler: Crawler, crawlId: string, kill: Kill): Promise<number> {
  await until(() => crawler.crawled() >= kill.pages || crawler.child.exitCode !== null, `${kill.pages} pages crawled`);
  await new Promise((r) => setTimeout(r, kill.delayMs));
  // The browser is looked up before the in-flight wait: a scan of /proc between seeing unsynced bytes and
  // the kill took long enough on a loaded machine for the sync to complete first (cutting nothing).
  const browsers = browserPidsOf(crawler.child.pid!);
  expect(browsers.length, "the crawler's browser is running").toBeGreaterThan(0);
  // Polled each millisecond for up to 5 s: a sync takes milliseconds, a page's writes come in bursts.
  const deadline = Date.now() + 5000;
  while (kill.inFlight && unsyncedBytes(crawlId) === 0 && crawler.child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 1));
  if (crawler.child.exitCode === null) crawler.child.kill("SIGKILL");
  expect({ exitCode: crawler.child.exitCode, signal: crawler.child.signalCode }, `ended on its own before the kill:\n${crawler.log().slice(-1500)}`).toEqual({ exitCode: null, signal: null });
  const killedAfterPages = crawler.crawled();
  // 137 in a shell: killed by SIGKILL, not an exit of its own.
  expect(await crawler.ended).toEqual({ code: null, signal: "SIGKILL" });
  await until(() => browsers.every((p) => processArgs(p) === null), "the browser to die with the crawler", 10_000);
  expect(killedAfterPages, "the kill landed mid-crawl").toBeLessThan(PAGES + 1);
  return killedAfterPages;
}

type Kill = (typeof KILLS)[number];

/** A WARC record as the checks look at it. */
interface Rec {
  type: string;
  id: string;
  url: string;
  date: string;
  digest: string;
  status: number;
  method: string;
  concurrentTo: string;
  refersTo: string;
}

/** Every record of these WARC files, read with warcio. */
async function recordsOf(warcs: Buffer[]): Promise<Rec[]> {
  const records: Rec[] = [];
  for (const warc of warcs.filter((w) => w.length > 0)) {
    for await (const r of new WARCParser([warc])) {
      await r.readFully();
      records.push({
        type: r.warcType ?? "",
        id: r.warcHeader("WARC-Record-ID") ?? "",
        url: r.warcTargetURI ?? "",
        date: warcDateToDigits(r.warcDate ?? ""),
        digest: r.warcPayloadDigest ?? "",
        status: Number(r.httpHeaders?.statusCode ?? 0),
        method: r.httpHeaders?.method ?? "",
        concurrentTo: r.warcConcurrentTo?.[0] ?? "",
        refersTo: r.warcRefersToTargetURI ? `${r.warcRefersToTargetURI} ${warcDateToDigits(r.warcRefersToDate ?? "")}` : "",
      });
    }
  }
  return records;
}

/** What the archive holds, keyed as the crawl state and the dedupe index name it. */
function archiveView(records: Rec[]) {
  const methodOf = new Map(records.filter((r) => r.type === "request").map((r) => [r.concurrentTo, r.method]));
  const http = records.filter((r) => r.type === "response" || r.type === "revisit");
  const exchanges = new Map<string, number>();
  for (const r of http) {
    const key = `${r.status} ${methodOf.get(r.id) ?? "?"} ${r.url}`;
    exchanges.set(key, (exchanges.get(key) ?? 0) + 1);
  }
  const originals = new Map(records.filter((r) => r.type === "response").map((r) => [`${r.url} ${r.date}`, r.digest]));
  return { records, http, exchanges, originals, urls: new Set(http.map((r) => r.url)) };
}
type ArchiveView = ReturnType<typeof archiveView>;

/** The exchange claims: "<status> <method> <url>" -> whether stored (else a process is writing it). */
async function claimsOf(crawlId: string, db: Redis): Promise<Map<string, boolean>> {
  const hash = await db.hgetall(crawlStateKeys(crawlId).storedExchanges);
  return new Map(Object.entries(hash).map(([field, value]) => [field.split(" ").slice(0, 3).join(" "), value === "stored" || value.startsWith("stored ")]));
}

/** What the crawl state and the dedupe index say is stored, that `archive` (and the page lists, `listed`) do not hold. */
// A plain Redis: the frontier is one shard (frontier/frontierShards.ts), shard 0.
async function claimedButMissing(crawlId: string, db: Redis, archive: ArchiveView, listed: string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const [exchange, stored] of await claimsOf(crawlId, db)) if (stored && !archive.exchanges.has(exchange)) missing.push(`stored exchange ${exchange}`);
  for (const page of await db.smembers(crawlStateKeys(crawlId).frontierShard(0).done)) {
    if (!archive.urls.has(page)) missing.push(`page done ${page}`);
    if (!listed.includes(page)) missing.push(`page done, not listed ${page}`);
  }
  for (const [digest, value] of Object.entries(await db.hgetall(dedupeKeys.crawlHashes(crawlId)))) {
    const entry = parseHashEntry(value);
    if (!entry || archive.originals.get(`${entry.url} ${entry.date}`) !== digest) missing.push(`dedupe original ${digest} ${value}`);
  }
  return missing;
}

/** The pages of a collection's page lists (every .jsonl under pages/), as they are on disk. */
function listedPages(collectionDir: string): string[] {
  return readdirSync(join(collectionDir, "pages"), { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) => readFileSync(join(collectionDir, "pages", f), "utf8").split("\n").filter(Boolean))
    .map((l) => JSON.parse(l) as { url?: string; format?: string })
    .flatMap((p) => (p.url && !p.format ? [p.url] : []));
}

/** Kill the crawl mid-way, then the power: the WARC files as a host crash leaves them. */
async function crashedCrawl(crawlId: string, db: number, kill: Kill, env: Record<string, string> = {}) {
  const crawler = startCrawler(crawlId, db, env);
  const killedAfterPages = await killMidCrawl(crawler, crawlId, kill);
  const cut: CutFile[] = cutToLastSync(join(cwd, "collections", crawlId), syncLogOf(crawlId));
  const warcs = cut.filter((c) => c.filename.endsWith(".warc.gz") && !c.removed);
  const archive = archiveView(await recordsOf(warcs.map((c) => readFileSync(join(archiveOf(crawlId), c.filename)))));
  return { killedAfterPages, cut, warcs, archive, listed: listedPages(join(cwd, "collections", crawlId)) };
}

/** After the reboot: each `.open` marker back to its first content (size 0), the dead crawler's heartbeat expired. */
async function rebooted(crawlId: string, db: Redis): Promise<void> {
  const markers = readdirSync(archiveOf(crawlId)).filter((f) => f.endsWith(".open"));
  expect(markers.length, "the killed crawler left its WARC file open").toBeGreaterThan(0);
  for (const marker of markers) {
    const owner = readFileSync(join(archiveOf(crawlId), marker), "utf8").split("\n")[1]!;
    writeFileSync(join(archiveOf(crawlId), marker), `${"0".padStart(20, "0")}\n${owner}\n`);
    await db.del(crawlStateKeys(crawlId).processHeartbeat(owner));
  }
}

/** Every WACZ of the collection: valid (every resource's hash and size, the digest file, each CDXJ line's record), and its records. */
async function finalWaczs(crawlId: string) {
  const dir = join(cwd, "collections", crawlId);
  const warcs: Buffer[] = [];
  const pages: string[] = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith(".wacz")).sort()) {
    const zip = await readZip(join(dir, name));
    const datapackage = JSON.parse(zip.get("datapackage.json")!.data.toString()) as { resources: { path: string; hash: string; bytes: number }[] };
    expect([...zip.keys()].filter((p) => !p.startsWith("datapackage")).sort(), name).toEqual(datapackage.resources.map((r) => r.path).sort());
    for (const r of datapackage.resources) expect({ path: r.path, hash: r.hash, bytes: r.bytes }).toEqual({ path: r.path, hash: sha256(zip.get(r.path)!.data), bytes: zip.get(r.path)!.data.length });
    expect(JSON.parse(zip.get("datapackage-digest.json")!.data.toString())).toEqual({ path: "datapackage.json", hash: sha256(zip.get("datapackage.json")!.data) });
    const archived = await recordsOf([...zip.keys()].filter((p) => p.startsWith("archive/")).map((p) => zip.get(p)!.data));
    const cdx = zip.get("indexes/index.cdxj")!.data.toString().trim().split("\n").map((l) => JSON.parse(l.slice(l.indexOf("{"))) as { url: string; offset: string; length: string; filename: string });
    expect(cdx.length, `${name}: one CDXJ line per response and revisit`).toBe(archived.filter((r) => r.type === "response" || r.type === "revisit").length);
    for (const line of cdx) expect(archiveView(await recordsOf([zip.get(`archive/${line.filename}`)!.data.subarray(Number(line.offset), Number(line.offset) + Number(line.length))])).records[0]?.url).toBe(line.url);
    warcs.push(...[...zip.keys()].filter((p) => p.startsWith("archive/")).map((p) => zip.get(p)!.data));
    pages.push(...["pages/pages.jsonl", "pages/extraPages.jsonl"].flatMap((p) => zip.get(p)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => (JSON.parse(l) as { url: string }).url));
  }
  return { archive: archiveView(await recordsOf(warcs)), pages };
}

describe(`a crawl killed with its host (seed ${SEED})`, () => {
  for (const [n, kill] of KILLS.entries()) {
    it(`after ${kill.pages} pages${kill.inFlight ? ", writes in flight" : ""}${kill.reboot ? ", resumed after a reboot" : ""}: nothing claimed is lost, and the resumed crawl stores each exchange once`, async () => {
      const crawlId = `durable${n}`;
      const db = new Redis(redisUrlOf(n + 1));
      clients.push(db);
      const crash = await crashedCrawl(crawlId, n + 1, kill);
      // What is left is whole records: the parser that refuses a cut-off gzip member reads every file.
      for (const c of crash.warcs) expect(() => readWarcRecords(join(archiveOf(crawlId), c.filename)), c.filename).not.toThrow();
      const claimsAtKill = await claimsOf(crawlId, db);
      expect([...claimsAtKill.values()].filter(Boolean).length, "exchanges stored before the kill").toBeGreaterThan(0);
      expect(await claimedButMissing(crawlId, db, crash.archive, crash.listed)).toEqual([]);
      const cutBytes = crash.warcs.reduce((sum, c) => sum + c.sizeAtKill - c.synced, 0);
      const pageListBytesCut = crash.cut.filter((c) => !c.filename.endsWith(".warc.gz")).reduce((sum, c) => sum + c.sizeAtKill - c.synced, 0);
      const filesRemoved = crash.cut.filter((c) => c.removed).map((c) => c.filename);
      trials.push({ crawlId, killedAfterPages: crash.killedAfterPages, cutBytes, pageListBytesCut, filesRemoved, storedAtKill: [...claimsAtKill.values()].filter(Boolean).length });

      // The same command again, with the same Redis: it repairs, resumes and finishes the crawl.
      if (kill.reboot) await rebooted(crawlId, db);
      const resumed = startCrawler(crawlId, n + 1, kill.reboot ? { CRAWLER_TEST_PID_NAMESPACE: "after-reboot" } : {});
      const ended = await resumed.ended;
      expect(ended, resumed.log().split("\n").filter((l) => l.includes('"error"')).join("\n").slice(-2000)).toEqual({ code: 0, signal: null });
      const { archive, pages } = await finalWaczs(crawlId);
      expect(await claimedButMissing(crawlId, db, archive, pages)).toEqual([]);
      const expectedPages = site.pagePaths.map((p) => `${site.url}${p}`).sort();
      expect((await db.smembers(crawlStateKeys(crawlId).frontierShard(0).done)).sort()).toEqual(expectedPages);
      expect(pages.sort()).toEqual(expectedPages);
      // Every revisit's original is in the archive.
      for (const r of archive.http.filter((h) => h.type === "revisit")) expect(archive.originals.has(r.refersTo), `original of ${r.url}: ${r.refersTo}`).toBe(true);
      expect(archive.http.some((h) => h.type === "revisit")).toBe(true);
      // No record twice; an exchange twice only if a process was writing it at the kill (its claim
      // provisional: it may be in what the sync kept and is written again by the resumed crawl).
      expect(new Set(archive.records.map((r) => r.id)).size).toBe(archive.records.length);
      const twice = [...archive.exchanges].filter(([key, count]) => count > 1 && !(claimsAtKill.has(key) && claimsAtKill.get(key) === false));
      expect(twice).toEqual([]);
    }, 120_000);
  }

  it("the power loss cut bytes off in at least one trial (else the trials prove nothing)", () => {
    expect(trials.length).toBe(KILLS.length);
    expect(trials.some((t) => t.cutBytes > 0), JSON.stringify(trials)).toBe(true);
  });

  it("with durable writes off, the same check finds exchanges claimed as stored that the crash took away", async () => {
    const db = new Redis(redisUrlOf(9));
    clients.push(db);
    const crash = await crashedCrawl("volatile", 9, { pages: 3, delayMs: 0, inFlight: false, reboot: false }, { CRAWLER_TEST_NO_DURABLE_WRITES: "1" });
    const missing = await claimedButMissing("volatile", db, crash.archive, crash.listed);
    console.log(`durable writes off: ${missing.length} claims lost, e.g. ${missing.slice(0, 3).join("; ")}`);
    expect(missing.filter((m) => m.startsWith("stored exchange")).length).toBeGreaterThan(0);
  }, 60_000);
});
