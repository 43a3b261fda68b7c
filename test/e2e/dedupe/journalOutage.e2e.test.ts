/**
 * The dedupe index's redis-server goes away mid-crawl; the crawler keeps crawling and its index notes
 * wait; then the crawler is SIGKILLed with notes still waiting. Run again once the index is back, the
 * same command must commit an index equal to what the archive holds: every stored 200 response
 * (recomputed from the WARC files) in h:<crawlId> and allhashes, counts exact, history and outlinks.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { logLines, NO_BEHAVIORS } from "../../helpers/cli.js";
import { writerName } from "../../../src/state/membership/writerSlots.js";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { dedupeKeys } from "../../../src/dedupe/indexKeys.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { httpStatus, readWarcRecords } from "../../helpers/warcFile.js";

const CRAWL = "journal";
let site: GeneratedSite | undefined;
let pages: number;
let cwd: string;
let state: TestRedis;
let dedupe: TestRedis;

/**
 * The site of one scenario: as many pages as its kill needs still to come (the rerun or the survivor crawls all
 * the rest, so every page more costs a page load).
 */
async function openSite(count: number): Promise<void> {
  pages = count;
  site = await startGeneratedSite(count);
}

// Each scenario has its own folder and its own servers (a committed crawl would turn the next one's responses into revisits).
beforeEach(async () => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-journal-"));
  state = await startTestRedis(true);
  dedupe = await startTestRedis(true);
});
afterEach(async () => {
  await site?.close();
  site = undefined;
  await state.stop();
  await dedupe.stop();
  rmSync(cwd, { recursive: true, force: true });
});

function startCrawler(env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", `${site!.url}/page/0.html`, "--crawlId", CRAWL, "--collection", CRAWL, "--cwd", cwd, ...NO_BEHAVIORS,
    "--redisStoreUrl", state.url, "--redisDedupeUrl", dedupe.url, "--generateWACZ", "--workers", "2", "--netIdleWait", "1",
  ], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  return { child, exit, crawled: () => stderr.split('"message":"page crawled"').length - 1, log: () => stderr };
}

const archive = () => join(cwd, "collections", CRAWL, "archive");
/** Index notes journaled (waiting for the index) in the archive folder now, per journal file. */
function journals(): Record<string, number> {
  if (!existsSync(archive())) return {};
  const files = readdirSync(archive()).filter((f) => f.startsWith("notes-"));
  return Object.fromEntries(files.map((f) => [f, readFileSync(join(archive(), f), "utf8").split("\n").filter(Boolean).length]));
}
const journaledNotes = () => Object.values(journals()).reduce((a, b) => a + b, 0);

async function until(condition: () => boolean, what: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The committed index against the WARC files: every stored 200 response, exact counts, history, outlinks. Returns the stored responses. */
async function expectIndexEqualsArchive() {
  const client = dedupe.client;
  expect(await client.sismember("allcrawls", CRAWL)).toBe(1);
  expect(journaledNotes(), "every journal written and removed").toBe(0);
  // What the archive holds, recomputed from the WARC files.
  const records = readdirSync(archive()).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(archive(), f)));
  const stored = records.filter((r) => r.headers.get("warc-type") === "response" && httpStatus(r) === 200 && r.payload.length > 0 && !r.headers.has("warc-truncated"));
  expect(stored.length).toBeGreaterThan(pages);
  const hashes = await client.hgetall(`h:${CRAWL}`);
  const allhashes = await client.hgetall("allhashes");
  const missing = stored.filter((r) => !hashes[r.headers.get("warc-payload-digest")!] || !allhashes[r.headers.get("warc-payload-digest")!]);
  expect(missing.map((r) => r.headers.get("warc-target-uri")), "stored responses missing from h:<crawlId> / allhashes").toEqual([]);
  const history = await client.hgetall(`u:${CRAWL}`);
  const noHistory = [...new Set(stored.map((r) => r.headers.get("warc-target-uri")!))].filter((u) => !history[u]);
  expect(noHistory, "stored responses missing from the capture history").toEqual([]);
  // Counts exact: one URL per response or revisit record in the archive, one dupe per revisit.
  const counted = (type: string) => records.filter((r) => r.headers.get("warc-type") === type && /^https?:/.test(r.headers.get("warc-target-uri")!)).length;
  const counts = await client.hgetall(`h:${CRAWL}:counts`);
  expect({ totalUrls: Number(counts.totalUrls), dupeUrls: Number(counts.dupeUrls ?? 0) }).toEqual({ totalUrls: counted("response") + counted("revisit"), dupeUrls: counted("revisit") });
  const outlinks = await client.hgetall(`o:${CRAWL}`);
  const pageUrls = Array.from({ length: pages }, (_, i) => `${site!.url}/page/${i}.html`);
  expect(pageUrls.filter((u) => !outlinks[u]), "pages without recorded outlinks").toEqual([]);
  return stored;
}

describe("a crawler SIGKILLed while the dedupe index is away and index notes wait", () => {
  it("run again once the index is back: the committed index holds every stored response, exact counts, history and outlinks", async () => {
    // Killed after 7 pages: the crawl must have pages left then.
    await openSite(20);
    const first = startCrawler();
    await until(() => first.crawled() >= 3 || first.child.exitCode !== null, "3 pages crawled");
    await dedupe.stopServer();
    const crawledAtOutage = first.crawled();
    // Pages crawled while the index is away: their notes (hash entries, counts, history, outlinks) all wait.
    await until(() => first.crawled() >= crawledAtOutage + 4 || first.child.exitCode !== null, "4 pages crawled during the outage");
    expect(first.child.exitCode, first.log().slice(-2000)).toBeNull();
    first.child.kill("SIGKILL");
    const killed = await first.exit;
    expect(killed.signal, "the first crawler must die by the SIGKILL, not on its own").toBe("SIGKILL");
    const crawledAtKill = first.crawled();
    expect(crawledAtKill, "killed mid-crawl").toBeLessThan(pages);
    expect(first.log()).toContain("index notes kept, retried until it answers");
    const waiting = journaledNotes();

    await dedupe.restartServer();
    const second = startCrawler();
    const rerun = await second.exit;
    expect(rerun.code, second.log().split("\n").filter((l) => /"(error|warn)"/.test(l)).slice(-8).join("\n")).toBe(0);
    const stored = await expectIndexEqualsArchive();
    // The notes really waited on disk for the rerun, which wrote them before committing.
    expect(waiting, "index notes journaled at the kill").toBeGreaterThan(0);
    expect(second.log()).toContain("index notes left in a journal by an earlier run");
    console.log(`journal outage: ${crawledAtOutage} pages crawled at the outage, ${crawledAtKill} at the kill with ${waiting} notes journaled; ${stored.length} stored responses checked`);
  }, 300_000);

  it("a survivor sharing the crawl packages the killed crawler's files: it writes that crawler's journaled notes first, then commits", async () => {
    // The victim is killed after about 5 pages of its own while the survivor may crawl as many or more: the crawl
    // must still have pages left then (neither may end it before the kill).
    await openSite(30);
    const [victim, survivor] = [startCrawler(), startCrawler()];
    await until(() => victim.crawled() >= 2 || victim.child.exitCode !== null, "2 pages crawled by the victim");
    await dedupe.stopServer();
    const victimAtOutage = victim.crawled();
    await until(() => victim.crawled() >= victimAtOutage + 3 || victim.child.exitCode !== null, "3 pages crawled by the victim during the outage");
    expect(victim.child.exitCode, victim.log().slice(-2000)).toBeNull();
    victim.child.kill("SIGKILL");
    expect((await victim.exit).signal, "the victim must die by the SIGKILL, not on its own").toBe("SIGKILL");
    expect(survivor.child.exitCode, "the survivor crawls on").toBeNull();
    const atKill = journals();

    await dedupe.restartServer();
    const end = await survivor.exit;
    expect(end.code, survivor.log().split("\n").filter((l) => /"(error|warn)"/.test(l)).slice(-8).join("\n")).toBe(0);
    const adopted = logLines(survivor.log()).filter((l) => l.message === "packaging the files of a crawler process that died").map((l) => writerName(l.details.writer as number));
    expect(adopted).toHaveLength(1);
    const stored = await expectIndexEqualsArchive();
    // The victim's own journal held notes at the kill: the survivor wrote them before committing.
    const victimNotes = atKill[`notes-${adopted[0]}.jsonl`] ?? 0;
    expect(victimNotes, `index notes in the victim's journal at the kill (${JSON.stringify(atKill)})`).toBeGreaterThan(0);
    console.log(`journal outage, survivor: victim (${adopted[0]}) killed after ${victim.crawled()} pages with ${victimNotes} notes journaled; ${stored.length} stored responses checked`);
  }, 300_000);
});

/** Paused for ten minutes right after its first record is written, before the index (or a journal) is told of it. */
const PAUSED_AFTER_WRITE = { CRAWLER_TEST_PAUSE_AT: "record-written", CRAWLER_TEST_PAUSE_MS: "600000" };
const NOTED_FROM_RECORDS = "indexed records a crawler that died had written but not yet noted in the index";

describe("a crawler SIGKILLed between writing a record and noting it (the index up all along)", () => {
  /**
   * Kills the crawler once it paused after a record. The pause holds one record unnoted; the crawler's other
   * exchanges go on meanwhile, so more records may be written and not yet noted at the kill. What the kill left
   * unnoted is read from the index and the journals at that moment: the WARC files then present and the notes
   * applied or journaled then.
   */
  async function killAtThePause(crawler: ReturnType<typeof startCrawler>) {
    await until(() => crawler.log().includes("test pause at record-written") || crawler.child.exitCode !== null, "the pause after a record is written");
    expect(crawler.child.exitCode, crawler.log().slice(-2000)).toBeNull();
    crawler.child.kill("SIGKILL");
    expect((await crawler.exit).signal, "killed by the SIGKILL, not ended on its own").toBe("SIGKILL");
    // Every exchange that reached the pause holds its record unnoted (a page's exchanges are stored concurrently).
    const pauses = logLines(crawler.log()).filter((l) => l.message === "test pause at record-written").length;
    // Which WACZ each WARC file goes into, and each writer's WACZ files, from the crawl state.
    const keys = crawlStateKeys(CRAWL);
    const waczOfWarc = await state.client.hgetall(keys.warcToWacz);
    const warcFiles = readdirSync(archive()).filter((f) => f.endsWith(".warc.gz")).map((f) => ({ file: f, wacz: waczOfWarc[f] }));
    const writers = [writerName(0), writerName(1)];
    const waczOfWriter = new Map(await Promise.all(writers.map(async (w) => [w, await state.client.lrange(keys.waczNames(w), 0, -1)] as const)));
    // A journal line the kill cut short was never kept: it names no note.
    const noteId = (line: string): string[] => {
      try {
        return [(JSON.parse(line) as { id: string }).id];
      } catch {
        return [];
      }
    };
    const journaled = Object.keys(journals()).flatMap((f) => readFileSync(join(archive(), f), "utf8").split("\n").filter(Boolean).flatMap(noteId));
    const noted = new Set([...(await dedupe.client.smembers(dedupeKeys.appliedNotes(CRAWL))), ...journaled]);
    return { warcFiles, waczOfWriter, noted, pauses };
  }

  /**
   * Responses and revisits (as the archive ends up) whose record no note had told the index of at the kill, in
   * the WARC files of `writer`'s WACZ files (the killed writer's: a survivor's own records are noted by the survivor).
   */
  function unnotedAtKill({ warcFiles, waczOfWriter, noted, pauses }: Awaited<ReturnType<typeof killAtThePause>>, writer: string): string[] {
    const own = new Set(waczOfWriter.get(writer) ?? []);
    const files = warcFiles.filter((f) => own.has(f.wacz) && existsSync(join(archive(), f.file)));
    expect(files.length, `WARC files of writer ${writer} at the kill`).toBeGreaterThan(0);
    const unnoted = files.flatMap((f) => readWarcRecords(join(archive(), f.file)))
      .filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!) && /^https?:/.test(r.headers.get("warc-target-uri")!))
      .map((r) => r.headers.get("warc-record-id")!)
      .filter((id) => !noted.has(id));
    expect(unnoted.length, `at least the ${pauses} records held at the pause`).toBeGreaterThanOrEqual(pauses);
    return unnoted;
  }

  it("the same command run again notes that record from the WARC file: the committed index counts exactly what the archive holds", async () => {
    // Killed at its first record: a few pages are enough for the rerun to crawl after it.
    await openSite(12);
    const atKill = await killAtThePause(startCrawler(PAUSED_AFTER_WRITE));
    const second = startCrawler();
    const rerun = await second.exit;
    expect(rerun.code, second.log().split("\n").filter((l) => /"(error|warn)"/.test(l)).slice(-8).join("\n")).toBe(0);
    await expectIndexEqualsArchive();
    const unnoted = unnotedAtKill(atKill, writerName(0));
    expect(logLines(second.log()).filter((l) => l.message === NOTED_FROM_RECORDS).map((l) => l.details.records)).toEqual([unnoted.length]);
  }, 300_000);

  it("a survivor packaging the killed crawler's files notes that record before it commits", async () => {
    // Enough pages that the victim, started beside the survivor, gets one before the survivor has crawled them all.
    await openSite(12);
    const [victim, survivor] = [startCrawler(PAUSED_AFTER_WRITE), startCrawler()];
    const atKill = await killAtThePause(victim);
    const end = await survivor.exit;
    expect(end.code, survivor.log().split("\n").filter((l) => /"(error|warn)"/.test(l)).slice(-8).join("\n")).toBe(0);
    await expectIndexEqualsArchive();
    const adopted = logLines(survivor.log()).filter((l) => l.message === "packaging the files of a crawler process that died").map((l) => writerName(l.details.writer as number));
    expect(adopted).toHaveLength(1);
    const unnoted = unnotedAtKill(atKill, adopted[0]!);
    expect(logLines(survivor.log()).filter((l) => l.message === NOTED_FROM_RECORDS).map((l) => l.details.records)).toEqual([unnoted.length]);
  }, 300_000);
});
