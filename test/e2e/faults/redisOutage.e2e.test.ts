/**
 * The crawl-state and dedupe redis-server (one server, AOF fsync every second) is SIGKILLed while three
 * crawler processes share a crawl, and started again on the same port and data folder 3 s later. The
 * index must end equal to what the archive holds: every stored 200 response, recomputed from the WARC
 * files, in h:<crawlId> and allhashes; its URL in the capture history; every page's outlinks; no page
 * listed twice; every WACZ clean.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGeneratedSite, type GeneratedSite } from "../../../bench/lib/generatedSite.js";
import { EmbeddedRedis } from "../../../src/redis/embedded.js";
import { NO_BEHAVIORS } from "../../helpers/cli.js";
import { httpStatus, readWarcRecords, sha256 } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

const PAGES = 100;
const CRAWL = "outage3";
let site: GeneratedSite;
let cwd: string;
let dataDir: string;

beforeAll(async () => {
  site = await startGeneratedSite(PAGES);
  cwd = mkdtempSync(join(tmpdir(), "crawl-redis-outage-"));
  dataDir = mkdtempSync(join(tmpdir(), "crawl-redis-outage-data-"));
});
afterAll(async () => {
  await site.close();
  rmSync(cwd, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcess;
  exit: Promise<number | null>;
  crawled: () => number;
  log: () => string;
}

function startCrawler(redisUrl: string): Running {
  const child = spawn(process.execPath, [
    "dist/src/cli/crawl.js", "--url", `${site.url}/page/0.html`, "--crawlId", CRAWL, "--collection", CRAWL, "--cwd", cwd, ...NO_BEHAVIORS,
    "--redisStoreUrl", redisUrl, "--generateWACZ", "--workers", "2", "--netIdleWait", "1",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exit, crawled: () => stderr.split('"message":"page crawled"').length - 1, log: () => stderr };
}

describe("the crawl's redis-server SIGKILLed mid-crawl and restarted 3 s later", () => {
  it("three processes: the index holds every stored response, its history and outlinks; no page twice; WACZ clean", async () => {
    let server = new EmbeddedRedis({ dataDir, persist: true });
    const url = await server.start();
    const client = new Redis(url);
    client.on("error", () => {});
    try {
      const started = Date.now();
      const crawlers = [0, 1, 2].map(() => startCrawler(url));
      // 12 s in, and mid-crawl (a slow machine may need longer to get its browsers going).
      while ((Date.now() - started < 12_000 || crawlers.reduce((n, c) => n + c.crawled(), 0) < 10) && crawlers.every((c) => c.child.exitCode === null)) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const crawledAtKill = crawlers.reduce((n, c) => n + c.crawled(), 0);
      expect(crawledAtKill, "the kill must come mid-crawl").toBeLessThan(PAGES);
      const { pid } = JSON.parse(readFileSync(join(dataDir, "embedded-redis.json"), "utf8")) as { pid: number };
      process.kill(pid, "SIGKILL");
      await new Promise((r) => setTimeout(r, 3000));
      server = new EmbeddedRedis({ dataDir, persist: true, port: server.port });
      await server.start();

      const codes = await Promise.all(crawlers.map((c) => c.exit));
      expect(codes, crawlers.map((c) => c.log().split("\n").filter((l) => /"(error|warn)"/.test(l)).slice(-5).join("\n")).join("\n")).toEqual([0, 0, 0]);
      expect(await client.sismember("allcrawls", CRAWL)).toBe(1);

      // What the archive holds, recomputed from the WARC files.
      const dir = join(cwd, "collections", CRAWL);
      const records = readdirSync(join(dir, "archive")).filter((f) => f.endsWith(".warc.gz")).flatMap((f) => readWarcRecords(join(dir, "archive", f)));
      for (const r of records.filter((r) => r.headers.get("warc-type") !== "warcinfo")) expect(r.headers.get("warc-block-digest")).toBe(sha256(r.block));
      const stored = records.filter((r) => r.headers.get("warc-type") === "response" && httpStatus(r) === 200 && r.payload.length > 0 && !r.headers.has("warc-truncated"));
      expect(stored.length).toBeGreaterThan(PAGES);
      const hashes = await client.hgetall(`h:${CRAWL}`);
      const allhashes = await client.hgetall("allhashes");
      const history = await client.hgetall(`u:${CRAWL}`);
      const missing = stored.filter((r) => !hashes[r.headers.get("warc-payload-digest")!] || !allhashes[r.headers.get("warc-payload-digest")!]);
      expect(missing.map((r) => r.headers.get("warc-target-uri")), "stored responses missing from h:<crawlId> / allhashes").toEqual([]);
      const noHistory = [...new Set(stored.map((r) => r.headers.get("warc-target-uri")!))].filter((u) => !history[u]);
      expect(noHistory, "stored responses missing from the capture history").toEqual([]);
      // The counts too: one URL counted per response or revisit record in the archive.
      const captures = records.filter((r) => ["response", "revisit"].includes(r.headers.get("warc-type")!));
      expect(await client.hget(`h:${CRAWL}:counts`, "totalUrls")).toBe(String(captures.length));

      // Every page listed once, in a clean WACZ, with its outlinks recorded.
      const listed: string[] = [];
      for (const name of readdirSync(dir).filter((f) => f.endsWith(".wacz"))) {
        const zip = await readZip(join(dir, name));
        const datapackage = JSON.parse(zip.get("datapackage.json")!.data.toString()) as { resources: { path: string; hash: string }[] };
        for (const resource of datapackage.resources) expect(resource.hash, `${name} ${resource.path}`).toBe(sha256(zip.get(resource.path)!.data));
        for (const p of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
          listed.push(...(zip.get(p)?.data.toString().trim().split("\n").slice(1) ?? []).map((l) => (JSON.parse(l) as { url: string }).url));
        }
      }
      const expectedPages = Array.from({ length: PAGES }, (_, i) => `${site.url}/page/${i}.html`).sort();
      expect([...listed].sort()).toEqual(expectedPages);
      const outlinks = await client.hgetall(`o:${CRAWL}`);
      expect(expectedPages.filter((u) => !outlinks[u]), "pages without recorded outlinks").toEqual([]);
      console.log(`redis outage: ${crawledAtKill} pages crawled at the kill, ${stored.length} stored responses checked`);
    } finally {
      client.disconnect();
      await server.stop();
    }
  }, 300_000);
});
