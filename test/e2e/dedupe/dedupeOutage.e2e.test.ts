import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readZip } from "../../helpers/zip.js";

/**
 * The dedupe Redis goes away while WARC files open: a page handler stops it before the seed is served,
 * and (in the first crawl) another brings it back before the last page is served.
 */
interface OutageSite {
  url: string;
  close(): Promise<void>;
}

const PAGES = ["/", "/a", "/b", "/c"];

async function startOutageSite(hooks: Record<string, () => Promise<void>>): Promise<OutageSite> {
  const fired = new Set<string>();
  const server: Server = createServer((req, res) => {
    const path = req.url ?? "/";
    void (async () => {
      if (hooks[path] && !fired.has(path)) {
        fired.add(path);
        await hooks[path]();
      }
      if (!PAGES.includes(path)) {
        res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
        return;
      }
      const links = path === "/" ? PAGES.slice(1).map((p) => `<a href="${p}">${p}</a>`).join(" ") : "";
      // Each page's incompressible records pass the 4KB rollover: every page opens a new WARC file (and WACZ).
      const filler = `<p>${randomBytes(4500).toString("base64")}</p>`;
      res.writeHead(200, { "Content-Type": "text/html" }).end(`<!doctype html><title>page ${path}</title>${links}${filler}`);
    })();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

async function waczContents(dir: string): Promise<{ files: string[]; responseUrls: string[] }> {
  const files = readdirSync(dir).filter((f) => f.endsWith(".wacz")).sort();
  const responseUrls: string[] = [];
  for (const file of files) {
    const zip = await readZip(join(dir, file));
    for (const [name, entry] of zip) {
      if (!name.startsWith("indexes/") || !name.endsWith(".cdxj")) continue;
      for (const line of entry.data.toString().split("\n").filter(Boolean)) {
        const json = JSON.parse(line.slice(line.indexOf("{"))) as { url: string; mime?: string };
        if (json.mime !== "warc/revisit") responseUrls.push(new URL(json.url).pathname);
      }
    }
  }
  return { files, responseUrls };
}

interface Scenario {
  redis: TestRedis;
  site: OutageSite;
  cwd: string;
  crawl: Promise<CliResult>;
}

/** A crawl of an outage site with a dedupe Redis of its own; `hooks` stop or restart that Redis as pages are served. */
async function startScenario(collection: string, hooks: (redis: TestRedis) => Record<string, () => Promise<void>>, extra: string[]): Promise<Scenario> {
  const redis = await startTestRedis(true);
  const site = await startOutageSite(hooks(redis));
  const cwd = mkdtempSync(join(tmpdir(), "crawl-outage-"));
  const crawl = runCli("crawl", ["--url", site.url + "/", "--collection", collection, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ",
    "--redisDedupeUrl", redis.url, ...extra, "--statsFilename", join(cwd, "stats.json")], { timeoutMs: 240_000 });
  return { redis, site, cwd, crawl };
}

async function stopScenario(scenario: Scenario | undefined): Promise<void> {
  if (!scenario) return;
  await scenario.crawl;
  await scenario.site.close();
  await scenario.redis.stop();
  rmSync(scenario.cwd, { recursive: true, force: true });
}

// Both crawls start at once, each with its own Redis, site and folder: the second mostly waits out the
// crawler's retry budget for an index that never comes back.
let back: Scenario;
let away: Scenario;
beforeAll(async () => {
  back = await startScenario("outage", (redis) => ({ "/": () => redis.stopServer(), "/c": () => redis.restartServer() }), ["--rolloverSize", "4KB"]);
  away = await startScenario("away", (redis) => ({ "/": () => redis.stopServer() }), []);
});

afterAll(async () => {
  await stopScenario(back);
  await stopScenario(away);
}, 300_000);

describe("dedupe Redis away while WARC files open", () => {
  it("packages every WARC file, registers every WACZ in order with its hash, and commits", async () => {
    const { redis, cwd } = back;
    const dir = join(cwd, "collections", "outage");
    const crawl = await back.crawl;
    expect(crawl.code, crawl.stderr.slice(-2000)).toBe(0);
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { crawled: number; committed: boolean };
    expect(stats).toMatchObject({ crawled: 4, committed: true });

    // The outage really hit WARC files being opened.
    const unregistered = logLines(crawl.stderr).filter((l) => l.message.includes("WACZ not registered yet"));
    expect(unregistered.map((l) => l.details.wacz)).toContain("outage.wacz");
    const warcs = readdirSync(join(dir, "archive")).filter((f) => f.endsWith(".warc.gz"));
    expect(warcs.length).toBe(4);
    const { files, responseUrls } = await waczContents(dir);
    expect(files.length).toBe(4);
    // Each page's response is in a WACZ: those captured while the dedupe Redis was down too.
    expect(responseUrls.filter((u) => PAGES.includes(u)).sort()).toEqual([...PAGES].sort());

    const list = (await redis.client.lrange("c:outage:wacz", 0, -1)).map((j) => JSON.parse(j) as { filename: string; hash?: string });
    expect(list.map((e) => e.filename)).toEqual(["outage.wacz", "outage-2.wacz", "outage-3.wacz", "outage-4.wacz"]);
    expect(list.every((e) => e.hash?.startsWith("sha256:"))).toBe(true);
    expect(await redis.client.sismember("allcrawls", "outage")).toBe(1);
  }, 300_000);
});

describe("dedupe Redis still away when the WACZ files are registered", () => {
  it("retries, then fails with one clear error and exit 8 (Redis unavailable); nothing is claimed committed", async () => {
    const { redis, cwd } = away;
    const crawl = await away.crawl;
    expect(crawl.code).toBe(8);
    // The records' index notes (which need the WACZ registered) could not be written: the crawl cannot be committed.
    expect(crawl.stderr).toMatch(/WACZ files not finished: cannot write \d+ index notes \(first: index http:[^)]*\): dedupe index unreachable for 30s \(away\.wacz not registered in the dedupe index yet\)/);
    const stats = JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8")) as { status: string; committed: boolean; crawled: number };
    expect(stats).toMatchObject({ status: "failed", committed: false, crawled: 4 });
    // The records are all still on disk, for a later run to package.
    expect(readdirSync(join(cwd, "collections", "away", "archive")).filter((f) => f.endsWith(".warc.gz")).length).toBe(1);
    await redis.restartServer();
    expect(await redis.client.sismember("allcrawls", "away")).toBe(0);
  }, 300_000);
});
