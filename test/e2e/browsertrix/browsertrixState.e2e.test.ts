import { Frontier } from "../../../src/frontier/frontier.js";
import { Membership } from "../../../src/state/membership/membership.js";
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

/**
 * A seed /s/ linking to eight leaf pages /s/p1 ... /s/p8, each answered after a short delay so a
 * crawl can be interrupted half way. Counts the requests of each path (a page crawled twice shows).
 * Tests that count requests each have a site of their own, so that they can run side by side.
 */
const LEAVES = Array.from({ length: 8 }, (_, i) => `/s/p${i + 1}`);
const ALL_PAGES = ["/s/", ...LEAVES];

interface Site {
  origin: string;
  hits: Map<string, number>;
  close(): Promise<void>;
}

async function startSite(): Promise<Site> {
  const hits = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const html = (title: string, links: string[]) =>
      `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</body></html>`;
    const body = path === "/s/" ? html("seed", LEAVES) : LEAVES.includes(path) ? html(path, []) : null;
    setTimeout(() => {
      if (!body) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found");
        return;
      }
      res.writeHead(200, { "content-type": "text/html" }).end(body);
    }, path === "/s/" ? 0 : 300);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let site: Site;
let origin = "";
let cwd: string;
let redis: TestRedis;

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "btx-state-"));
  site = await startSite();
  origin = site.origin;
  redis = await startTestRedis();
});

afterAll(async () => {
  await site?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

/** Run body with a site of its own (its request counts are the test's alone). */
async function withSite<T>(body: (site: Site) => Promise<T>): Promise<T> {
  const own = await startSite();
  try {
    return await body(own);
  } finally {
    await own.close();
  }
}

const collectionDir = (name: string) => join(cwd, "collections", name);

/** Pages listed in a collection's pages files (paths), duplicates kept. */
function listedPages(name: string): string[] {
  const dir = join(collectionDir(name), "pages");
  return ["pages.jsonl", "extraPages.jsonl"].map((f) => join(dir, f)).filter((f) => existsSync(f)).flatMap((f) =>
    readFileSync(f, "utf8").trim().split("\n").slice(1).map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname),
  );
}

function stateFiles(name: string): string[] {
  const dir = join(collectionDir(name), "crawls");
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort().map((f) => join(dir, f)) : [];
}

interface SavedFile {
  state: { id: string; finished: string[]; queued: string[]; pending: string[]; failed: string[]; errors: string[]; extraSeeds: string[]; excluded: string[]; sitemapDone: boolean };
  [key: string]: unknown;
}

const readState = (file: string) => load(readFileSync(file, "utf8")) as SavedFile;
const pathOf = (url: string) => new URL(url).pathname;
const sorted = (list: string[]) => [...list].sort();

/** The JSON lines of a collection's log file(s). */
function logFileLines(name: string): { logLevel: string; context: string; message: string }[] {
  const dir = join(collectionDir(name), "logs");
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)));
}

function rawLogFileLines(name: string): string[] {
  const dir = join(collectionDir(name), "logs");
  return readdirSync(dir).flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n").filter(Boolean));
}

const BTX_ERROR_LINE = JSON.stringify({ timestamp: "2024-05-01T10:00:01.000Z", logLevel: "error", context: "general", message: "earlier error", details: {} });

/**
 * A state file as browsertrix-crawler 1.14.1 writes it (crawler.ts serializeConfig: the config, then
 * state.ts serialize()): seed and p1, p2, p8 finished; p3, p4 queued; p5 pending (an object, as it
 * also accepts); p6 failed with its retries used up (2), p7 with one left; one error log line.
 */
function btxStateFile(name: string, origin: string): string {
  const entry = (path: string, extra: Record<string, unknown> = {}) => JSON.stringify({ added: "2024-05-01T10:00:00.000Z", url: origin + path, seedId: 0, depth: 1, extraHops: 0, ...extra });
  const file = join(cwd, name);
  writeFileSync(file, [
    `seeds:`, `  - ${origin}/s/`, `scopeType: prefix`, `workers: 1`, `behaviors: ""`, `netIdleWait: 0`, `saveState: partial`,
    `state:`,
    `  extraSeeds: []`,
    `  finished:`, ...[`/s/`, `/s/p1`, `/s/p2`, `/s/p8`].map((p) => `    - ${origin}${p}`),
    `  queued:`, ...[`/s/p3`, `/s/p4`].map((p) => `    - '${entry(p)}'`),
    `  pending:`, `    - url: ${origin}/s/p5`, `      seedId: 0`, `      depth: 1`, `      extraHops: 0`, `      started: "2024-05-01T10:00:02.000Z"`,
    `  sitemapDone: false`,
    `  failed:`, `    - '${entry("/s/p6", { retry: 2 })}'`, `    - '${entry("/s/p7", { retry: 1 })}'`,
    `  errors:`, `    - '${BTX_ERROR_LINE}'`,
    `  excluded: []`,
  ].join("\n") + "\n");
  return file;
}

/** Start a crawl and send SIGINT once `pages` pages are logged as crawled. */
function crawlUntil(args: string[], pages: number): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let sent = false;
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      const crawled = stderr.split("\n").filter((l) => l.includes('"message":"page crawled"')).length;
      if (!sent && crawled >= pages) {
        sent = true;
        child.kill("SIGINT");
      }
    });
    child.on("exit", (code) => resolve({ code, stderr }));
  });
}

// Independent crawls on their own collections (and sites where requests are counted): two at a time.
describe.concurrent("--saveState partial (the default) and resuming with --config <state file>", () => {
  it("writes the exact finished and queued pages on SIGINT; a new collection resumes from the file, crawling each page once; so does the same collection (browsertrix-crawler's way), where a rerun with the same file goes on from where the crawl is", () =>
    withSite(async ({ origin, hits }) => {
      const args = ["--url", `${origin}/s/`, "--collection", "part1", "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0"];
      const first = await crawlUntil(args, 3);
      expect(first.code, first.stderr.slice(-1500)).toBe(11);
      const files = stateFiles("part1");
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/\/\d{17}-part1\.yaml$/);
      const saved = readState(files[0]);
      const crawled = listedPages("part1");
      expect(crawled.length).toBeGreaterThanOrEqual(3);
      expect(crawled.length).toBeLessThan(ALL_PAGES.length);
      // browsertrix-crawler's sections: finished = crawled URLs, queued = queue entries (JSON strings).
      expect(saved.state.id).toBe("part1");
      expect(sorted(saved.state.finished.map(pathOf))).toEqual(sorted(crawled));
      const queued = saved.state.queued.map((json) => JSON.parse(json) as { url: string; seedId: number; depth: number; extraHops: number });
      expect(sorted(queued.map((q) => pathOf(q.url)))).toEqual(sorted(ALL_PAGES.filter((p) => !crawled.includes(p))));
      for (const q of queued) expect(q).toMatchObject({ seedId: 0, depth: 1, extraHops: 0 });
      expect(saved.state).toMatchObject({ pending: [], failed: [], extraSeeds: [], sitemapDone: false });
      // The flags given are kept with it, so the file alone resumes the crawl.
      expect(saved).toMatchObject({ url: [`${origin}/s/`], collection: "part1" });
      const afterFirst = new Map(hits);

      // In a new collection.
      const second = await runCli("crawl", ["--config", files[0], "--collection", "part2", "--cwd", cwd]);
      expect(second.code, second.stderr.slice(-1500)).toBe(0);
      const resumed = listedPages("part2");
      expect(sorted(resumed)).toEqual(sorted(ALL_PAGES.filter((p) => !crawled.includes(p))));
      expect(sorted([...crawled, ...resumed])).toEqual(sorted(ALL_PAGES));
      for (const page of ALL_PAGES) expect(hits.get(page), page).toBe(1);
      // Finished: no state file (partial saves only an unfinished crawl).
      expect(stateFiles("part2")).toEqual([]);
      // The requests of the new collection's crawl, taken out of the counts below.
      const inSecond = new Map(ALL_PAGES.map((page) => [page, (hits.get(page) ?? 0) - (afterFirst.get(page) ?? 0)]));

      // In the same collection, interrupted again, then run to its end with the same file.
      const again = await crawlUntil([...args, "--config", files[0]], 2);
      expect(again.code).toBe(11);
      expect(again.stderr).toContain("crawl state loaded from the --config file");
      // Interrupted again: a second state file beside the first.
      expect(stateFiles("part1")).toHaveLength(2);
      // The same file once more: already loaded into this Redis, so the pages crawled since stay crawled.
      const last = await runCli("crawl", [...args, "--config", files[0]]);
      expect(last.code, last.stderr.slice(-1500)).toBe(0);
      expect(last.stderr).toContain("crawl state of the --config file was loaded before");
      expect(crawled.length).toBeGreaterThanOrEqual(3);
      expect(sorted(listedPages("part1"))).toEqual(sorted(ALL_PAGES));
      for (const page of ALL_PAGES) expect((hits.get(page) ?? 0) - (inSecond.get(page) ?? 0), page).toBe(1);
    }), 240_000);

  it("resumes from a state file written by browsertrix-crawler (its entry fields, pending objects, failed and errors); its errors are back in <crawlId>:e and its finished URLs in the seen set", () =>
    withSite(async ({ origin, hits }) => {
      const file = btxStateFile("btx-state.yaml", origin);
      const stats = join(cwd, "btx-stats.json");
      const run = await runCli("crawl", ["--config", file, "--collection", "frombtx", "--cwd", cwd, "--statsFilename", stats, "--crawlId", "restored-crawl", "--redisStoreUrl", redis.url]);
      expect(run.code, run.stderr.slice(-1500)).toBe(0);
      expect(run.stderr).toContain("crawl state loaded from the --config file");
      // Queued and pending pages are crawled; a failed page with retries left (1 < --maxPageRetries 2) too;
      // one that used them all (2) stays failed; finished pages (the seed among them) are not fetched.
      expect(sorted(listedPages("frombtx"))).toEqual(["/s/p3", "/s/p4", "/s/p5", "/s/p7"]);
      expect(sorted([...hits.keys()].filter((p) => p.startsWith("/s/")))).toEqual(["/s/p3", "/s/p4", "/s/p5", "/s/p7"]);
      expect(JSON.parse(readFileSync(stats, "utf8"))).toMatchObject({ crawled: 4, failed: 1, queued: 0, pending: 0 });
      expect(await redis.client.lrange("restored-crawl:e", 0, -1)).toEqual([BTX_ERROR_LINE]);
      // The seen set keeps fingerprints: a finished URL offered to the queue again is "seen".
      const state = new Frontier(redis.client, new Membership(redis.client, "restored-crawl", "checker-1-aaaa"));
      for (const p of ["/s/", "/s/p1", "/s/p2", "/s/p8"]) expect(await state.enqueue({ url: origin + p, depth: 1, seedId: 0, extraHops: 0 }, 0), p).toBe("seen");
    }), 180_000);

  it("--saveState never writes nothing on SIGINT", async () => {
    const run = await crawlUntil(["--url", `${origin}/s/`, "--collection", "never", "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0", "--saveState", "never"], 2);
    expect(run.code).toBe(11);
    expect(stateFiles("never")).toEqual([]);
  }, 180_000);
});

describe.concurrent("--saveState always, --logExcludeContext, a Redis without the list flags", () => {
  // One crawl: the state saves are logged in the "state" context, which is not excluded; Redis lists are
  // written only when asked for.
  let always: Promise<CliResult>;
  const alwaysRun = () =>
    (always ??= runCli("crawl", ["--url", `${origin}/s/`, "--collection", "always", "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0",
      "--saveState", "always", "--saveStateInterval", "1", "--saveStateHistory", "2", "--logExcludeContext", "page", "--logExcludeContext", "redis",
      "--crawlId", "quiet-crawl", "--redisStoreUrl", redis.url]));

  it("--saveState always saves every --saveStateInterval and at the end, keeping the newest --saveStateHistory files", async () => {
    const run = await alwaysRun();
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const saves = logLines(run.stderr).filter((l) => l.context === "state" && l.message === "crawl state saved");
    // Eight leaves at 300 ms each: at least two periodic saves, then the one at the end.
    expect(saves.length).toBeGreaterThanOrEqual(3);
    const files = stateFiles("always");
    expect(files).toHaveLength(2);
    expect(files).toEqual(saves.slice(-2).map((s) => s.details.file).sort());
    const last = readState(files[1]);
    expect(sorted(last.state.finished.map(pathOf))).toEqual(sorted(ALL_PAGES));
    expect(last.state.queued).toEqual([]);
    // A periodic save during the crawl still had pages queued.
    const earlier = saves.slice(0, -1).map((s) => s.details as { queued: number; pending: number });
    expect(earlier.some((s) => s.queued + s.pending > 0)).toBe(true);
  }, 180_000);

  it("--logExcludeContext: none of the contexts excluded reach stderr or the log file", async () => {
    const without = await alwaysRun();
    expect(without.code).toBe(0);
    const contexts = new Set(logLines(without.stderr).map((l) => l.context));
    expect(contexts.has("page")).toBe(false);
    expect(contexts.has("redis")).toBe(false);
    expect(contexts.has("crawl")).toBe(true);
    expect(logFileLines("always").some((l) => l.context === "page" || l.context === "redis")).toBe(false);
  }, 180_000);

  it("without --writePagesToRedis and --logBehaviorsToRedis nothing is pushed", async () => {
    const quiet = await alwaysRun();
    expect(quiet.code).toBe(0);
    expect(await redis.client.keys("quiet-crawl:pages")).toEqual([]);
    expect(await redis.client.keys("quiet-crawl:b")).toEqual([]);
  }, 180_000);

  it("refuses bad values with exit code 4", async () => {
    // Refused before a browser or Redis is started: the four runs side by side.
    const cases = [["--saveState", "sometimes"], ["--saveStateHistory", "0"], ["--saveStateInterval", "-1"], ["--context", "nosuchcontext"]];
    const runs = await Promise.all(cases.map((args) => runCli("crawl", ["--url", `${origin}/s/`, "--cwd", cwd, ...args])));
    for (const [i, args] of cases.entries()) {
      const run = runs[i];
      expect(run.code, args.join(" ")).toBe(4);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
    }
  });
});

describe.concurrent("Redis lists for the Browsertrix service", () => {
  it("--writePagesToRedis and --logBehaviorsToRedis push one JSON entry per page and per behavior log line", async () => {
    const run = await runCli("crawl", ["--url", `${origin}/s/`, "--collection", "lists", "--cwd", cwd, "--crawlId", "lists-crawl", "--redisStoreUrl", redis.url,
      "--netIdleWait", "0", "--behaviorTimeout", "5", "--writePagesToRedis", "--logBehaviorsToRedis", "--logErrorsToRedis", "--generateWACZ"]);
    expect(run.code, run.stderr.slice(-1500)).toBe(0);
    const pages = (await redis.client.lrange("lists-crawl:pages", 0, -1)).map((j) => JSON.parse(j) as Record<string, unknown>);
    expect(pages.map((p) => pathOf(p.url as string)).sort()).toEqual(sorted(ALL_PAGES));
    for (const page of pages) {
      expect(Object.keys(page).sort()).toEqual(["depth", "filename", "id", "loadState", "mime", "status", "title", "ts", "url", ...(page.depth === 0 ? ["seed"] : [])].sort());
      expect(page).toMatchObject({ status: 200, mime: "text/html", loadState: 4, filename: "lists.wacz" });
      expect(page.depth).toBe(pathOf(page.url as string) === "/s/" ? 0 : 1);
    }
    expect(pages.find((p) => p.depth === 0)).toMatchObject({ seed: true, title: "seed" });
    // Newest first (LPUSH), each line exactly as in the log file.
    const behaviorLines = rawLogFileLines("lists").filter((l) => {
      const e = JSON.parse(l) as { logLevel: string; context: string };
      return ["behavior", "behaviorScript"].includes(e.context) && ["info", "warn", "error"].includes(e.logLevel);
    });
    expect(behaviorLines.length).toBeGreaterThanOrEqual(ALL_PAGES.length);
    expect(await redis.client.lrange("lists-crawl:b", 0, -1)).toEqual([...behaviorLines].reverse());
    // Nothing went wrong: no error lines.
    expect(await redis.client.llen("lists-crawl:e")).toBe(0);
  }, 180_000);

  it("--logErrorsToRedis pushes each error log line to <crawlId>:e", async () => {
    const dead = `http://127.0.0.1:1/`;
    const run = await runCli("crawl", ["--url", dead, "--collection", "errors", "--cwd", cwd, "--crawlId", "errors-crawl", "--redisStoreUrl", redis.url,
      ...NO_BEHAVIORS, "--maxPageRetries", "0", "--logErrorsToRedis", "--allowAddresses", "loopback"]);
    expect(run.code).not.toBe(0);
    const errorLines = rawLogFileLines("errors").filter((l) => (JSON.parse(l) as { logLevel: string }).logLevel === "error");
    expect(errorLines.length).toBeGreaterThanOrEqual(1);
    const pushed = await redis.client.lrange("errors-crawl:e", 0, -1);
    expect(pushed).toEqual([...errorLines].reverse());
    for (const line of pushed) expect(JSON.parse(line)).toMatchObject({ logLevel: "error", context: expect.any(String), message: expect.any(String), timestamp: expect.any(String) });
  }, 180_000);

  it("--context: writes only the contexts asked for to stderr and the log file", async () => {
    const only = await runCli("crawl", ["--url", `${origin}/s/`, "--collection", "ctx-only", "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0", "--logContext", "page,state"]);
    expect(only.code, only.stderr.slice(-1500)).toBe(0);
    const onlyLines = logLines(only.stderr);
    expect(new Set(onlyLines.map((l) => l.context))).toEqual(new Set(["page"]));
    expect(onlyLines.filter((l) => l.message === "page crawled")).toHaveLength(ALL_PAGES.length);
    expect(new Set(logFileLines("ctx-only").map((l) => l.context))).toEqual(new Set(["page"]));
  }, 180_000);
});
