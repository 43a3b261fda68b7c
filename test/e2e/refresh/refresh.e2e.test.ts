import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCParser } from "warcio";
import { startVersionedSite, type PageAlias, type VersionedSite } from "../../../bench/lib/versionedSite.js";
import { logLines, runCli, type CliResult, NO_BEHAVIORS } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { detectReplayFailure, parseReplayFrameUrl, startReplayServer, type ReplayServer } from "../../helpers/replay.js";
import { openReplaySession, type ReplaySession } from "../../helpers/replaySession.js";
import { httpHeader, httpStatus, readWarcRecords, sha256 } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

let site: VersionedSite;
let redis: TestRedis;
let cwd: string;
let firstBytes: number;
let refreshBytes: number;
let refresh: CliResult;
let chainEnd: CliResult;

const crawl = (name: string, extra: string[] = [], seed = "/v/page/0.html") =>
  runCli("crawl", ["--url", `${site.url}${seed}`, "--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ",
    "--redisDedupeUrl", redis.url, "--netIdleWait", "1", "--statsFilename", join(cwd, `${name}.json`), ...extra]);
/** A URL's path and query (the site's aliases differ from their pages by their query only). */
const pathOf = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};
const aliasPaths = (aliases: PageAlias[]) => aliases.map((a) => a.path);
/** The change report's latest line per URL, as path -> entry. */
const changesOf = (name: string) => {
  const lines = readFileSync(join(cwd, "collections", name, "reports", "changes.jsonl"), "utf8").trim().split("\n");
  const latest = new Map<string, { change: string; status: number | null }>();
  for (const line of lines) {
    const entry = JSON.parse(line) as { url: string; change: string; status: number | null };
    latest.set(pathOf(entry.url), entry);
  }
  return latest;
};
const pathsOfKind = (changes: Map<string, { change: string }>, kind: string) =>
  [...changes].filter(([, e]) => e.change === kind).map(([path]) => path).sort();
const recordsOf = (name: string) => {
  const archive = join(cwd, "collections", name, "archive");
  return readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
};

beforeAll(async () => {
  // 20 pages: every kind of change more than once (4 changed, 2 gone, 2 added), and with their images over 30
  // URLs for the indexer's check. Two aliases (URLs serving another page's bytes), stored as revisits of it.
  site = await startVersionedSite({ pages: 20, deleted: 2, added: 2, aliases: true });
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-refresh-"));
  const first = await crawl("v1");
  if (first.code !== 0) throw new Error(first.stderr.slice(-1500));
  firstBytes = site.bytesServed;
  site.setVersion(2);
  site.resetCounters();
  refresh = await crawl("v2", ["--refresh"]);
  refreshBytes = site.bytesServed;
  // A third crawl of one URL: the alias new in version 2, a revisit there of the first crawl's response.
  chainEnd = await crawl("v3", ["--refresh", "--scopeType", "page"], site.truth.aliases.added[0].path);
}, 240_000);

afterAll(async () => {
  await site.close();
  await redis.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("refresh crawl against the capture history", () => {
  it("reports exactly the site's true changes", () => {
    expect(refresh.code, refresh.stderr.slice(-2000)).toBe(0);
    const changes = changesOf("v2");
    const { aliases } = site.truth;
    expect(pathsOfKind(changes, "unchanged")).toEqual([...site.truth.unchanged, ...site.truth.redirects.unchanged, ...aliasPaths(aliases.unchanged)].sort());
    expect(pathsOfKind(changes, "changed")).toEqual([...site.truth.changed, ...site.truth.redirects.changed].sort());
    expect(pathsOfKind(changes, "gone")).toEqual([...site.truth.gone].sort());
    expect(pathsOfKind(changes, "new")).toEqual([...site.truth.added, ...aliasPaths(aliases.added)].sort());
    expect(pathsOfKind(changes, "skipped-fresh")).toEqual([]);
  });

  it("puts counts, not URLs, into the stats file and the final log line", () => {
    const stats = JSON.parse(readFileSync(join(cwd, "v2.json"), "utf8"));
    const { truth } = site;
    const counts = {
      new: truth.added.length + truth.aliases.added.length,
      changed: truth.changed.length + truth.redirects.changed.length,
      unchanged: truth.unchanged.length + truth.redirects.unchanged.length + truth.aliases.unchanged.length,
      gone: truth.gone.length,
      "skipped-fresh": 0,
    };
    expect(stats.changes).toEqual(counts);
    expect(stats.changeReport).toBe(join(cwd, "collections", "v2", "reports", "changes.jsonl"));
    const last = logLines(refresh.stderr).find((l) => l.message === "crawl done")!;
    expect(last.details.changes).toEqual(counts);
    // No page URL anywhere in either: their size does not grow with the crawl.
    expect(JSON.stringify(stats)).not.toContain("/v/page/");
    expect(JSON.stringify(last)).not.toContain("/v/page/");
  });

  it("reports a redirect by its own status and Location: the same 301 is unchanged, a new Location changed", () => {
    expect(site.truth.redirects).toEqual({ unchanged: ["/v/page/old-page"], changed: ["/v/page/moved"] });
    const changes = changesOf("v2");
    expect(changes.get("/v/page/old-page")).toMatchObject({ change: "unchanged", status: 301 });
    expect(changes.get("/v/page/moved")).toMatchObject({ change: "changed", status: 301 });
  });

  it("writes unchanged pages as server-not-modified revisits of the first crawl, changed pages as responses", () => {
    const v1 = recordsOf("v1").filter((r) => r.headers.get("warc-type") === "response");
    const v2 = recordsOf("v2");
    for (const path of site.truth.unchanged) {
      const revisit = v2.find((r) => r.headers.get("warc-type") === "revisit" && pathOf(r.headers.get("warc-target-uri")!) === path)!;
      expect(revisit, path).toBeDefined();
      expect(revisit.headers.get("warc-profile")).toBe("http://netpreserve.org/warc/1.1/revisit/server-not-modified");
      // Written with the confirmed response's status line and headers (replay tools read those), the
      // server's real answer kept as x-orig-status.
      expect(httpStatus(revisit)).toBe(200);
      expect(httpHeader(revisit, "x-orig-status")).toBe("304");
      expect(httpHeader(revisit, "content-type")).toBe("text/html; charset=utf-8");
      const original = v1.find((r) => pathOf(r.headers.get("warc-target-uri")!) === path)!;
      expect(revisit.headers.get("warc-refers-to-target-uri")).toBe(original.headers.get("warc-target-uri"));
      expect(revisit.headers.get("warc-refers-to-date")).toBe(original.headers.get("warc-date"));
      expect(revisit.headers.get("warc-payload-digest")).toBe(original.headers.get("warc-payload-digest"));
      expect(revisit.headers.get("warc-refers-to-container")).toBe("file://v1.wacz");
    }
    for (const path of [...site.truth.changed, ...site.truth.added]) {
      const response = v2.find((r) => r.headers.get("warc-type") === "response" && pathOf(r.headers.get("warc-target-uri")!) === path);
      expect(response, path).toBeDefined();
      expect(httpStatus(response!)).toBe(200);
    }
  });

  it("transfers far fewer bytes than the first crawl", () => {
    expect(refreshBytes).toBeLessThan(firstBytes * 0.5);
  });

  it("lists the first crawl's WACZ in relation.requires and packages the change report", async () => {
    const wacz = await readZip(join(cwd, "collections", "v2", "v2.wacz"));
    const datapackage = JSON.parse(wacz.get("datapackage.json")!.data.toString());
    const v1Path = join(cwd, "collections", "v1", "v1.wacz");
    expect(datapackage.relation.requires).toEqual([{ filename: "v1.wacz", hash: sha256(readFileSync(v1Path)), size: statSync(v1Path).size, crawlId: "v1" }]);
    expect(datapackage.resources.map((r: { path: string }) => r.path)).toContain("reports/changes.jsonl");
    const lines = wacz.get("reports/changes.jsonl")!.data.toString().trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.change === "changed").map((l) => pathOf(l.url)).sort()).toEqual([...site.truth.changed, ...site.truth.redirects.changed].sort());
  });

  it("history lists both captures of a changed page, newest first", async () => {
    const url = `${site.url}${site.truth.changed[0]}`;
    const result = await runCli("history", ["--url", url, "--redisDedupeUrl", redis.url, "--json"]);
    expect(result.code, result.stderr).toBe(0);
    const captures = JSON.parse(result.stdout) as { crawlId: string; status: number; waczFilename: string; date: string }[];
    expect(captures.map((c) => [c.crawlId, c.status, c.waczFilename])).toEqual([["v2", 200, "v2.wacz"], ["v1", 200, "v1.wacz"]]);
    expect(captures[0].date > captures[1].date).toBe(true);
  });

  it("indexer --history builds the capture history from a WACZ's CDX (dates, statuses, digests)", async () => {
    const target = await startTestRedis();
    try {
      const imported = await runCli("indexer", ["--redisDedupeUrl", target.url, "--sourceUrl", join(cwd, "collections", "v1", "v1.wacz"), "--history"]);
      expect(imported.code, imported.stderr.slice(-1000)).toBe(0);
      // The indexer builds the history of 2xx responses only (CDX has no Location, and it leaves revisits out);
      // the crawler's history has its revisits too, each with the response it names (`original`).
      const live = Object.fromEntries(Object.entries(await redis.client.hgetall("u:v1")).filter(([, json]) => JSON.parse(json).status < 300 && !JSON.parse(json).original));
      expect(Object.keys(live).length).toBeGreaterThan(30);
      const built = await target.client.hgetall("u:v1");
      expect(Object.keys(built).sort()).toEqual(Object.keys(live).sort());
      for (const [url, json] of Object.entries(built)) {
        const [b, l] = [JSON.parse(json), JSON.parse(live[url])];
        expect([b.date, b.status, b.digest, b.waczIndex]).toEqual([l.date.slice(0, 14), l.status, l.digest, l.waczIndex]);
        expect(await target.client.hget("allurls", url)).toBe("v1");
      }
      const history = await runCli("history", ["--url", `${site.url}${site.truth.changed[0]}`, "--redisDedupeUrl", target.url, "--json"]);
      expect(JSON.parse(history.stdout).map((c: { crawlId: string }) => c.crawlId)).toEqual(["v1"]);
    } finally {
      await target.stop();
    }
  });

  it("--skipFreshDays fetches no page archived within that time and still follows their archived links", async () => {
    site.resetCounters();
    const fresh = await crawl("fresh", ["--refresh", "--skipFreshDays", "1"]);
    expect(fresh.code, fresh.stderr.slice(-1500)).toBe(0);
    expect(site.requests).toBe(0);
    const redirects = [...site.truth.redirects.unchanged, ...site.truth.redirects.changed];
    const aliases = aliasPaths([...site.truth.aliases.unchanged, ...site.truth.aliases.added]);
    const everything = [...site.truth.unchanged, ...site.truth.changed, ...site.truth.gone, ...site.truth.added, ...redirects, ...aliases].sort();
    expect(pathsOfKind(changesOf("fresh"), "skipped-fresh")).toEqual(everything);
    expect(changesOf("fresh").size).toBe(everything.length);
    const stats = JSON.parse(readFileSync(join(cwd, "fresh.json"), "utf8"));
    expect(stats.changes).toEqual({ new: 0, changed: 0, unchanged: 0, gone: 0, "skipped-fresh": everything.length });
  });

  describe("a revisit names the response record holding the payload, never another revisit", () => {
    const NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";
    const IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";
    /** The one record of a type for a path in a crawl's WACZ. */
    const recordOf = async (name: string, type: string, path: string) => {
      const found = (await waczRecords(name)).filter((r) => r.type === type && pathOf(r.url) === path);
      expect(found.map((r) => r.url), `${type} of ${path} in ${name}`).toHaveLength(1);
      return found[0];
    };

    it("crawl 1 stores an alias as an identical-payload revisit of its page's response", async () => {
      const [alias] = site.truth.aliases.unchanged;
      const page = await recordOf("v1", "response", alias.of);
      const revisit = await recordOf("v1", "revisit", alias.path);
      expect([revisit.profile, revisit.refersToUrl, revisit.refersToDate, revisit.container, revisit.digest])
        .toEqual([IDENTICAL, page.url, page.date, "file://v1.wacz", page.digest]);
    });

    it("the refresh's 304 for that alias names its page's response in crawl 1, not crawl 1's revisit of the alias", async () => {
      const [alias] = site.truth.aliases.unchanged;
      const page = await recordOf("v1", "response", alias.of);
      const revisit = await recordOf("v2", "revisit", alias.path);
      expect([revisit.profile, revisit.refersToUrl, revisit.refersToDate, revisit.container, revisit.digest])
        .toEqual([NOT_MODIFIED, page.url, page.date, "file://v1.wacz", page.digest]);
      expect(await requiredWaczOf("v2")).toEqual(["v1.wacz"]);
    });

    it("history shows the alias's 304 confirming its page's response, and crawl 1's capture as a revisit of that response", async () => {
      const [alias] = site.truth.aliases.unchanged;
      const page = await recordOf("v1", "response", alias.of);
      const result = await runCli("history", ["--url", `${site.url}${alias.path}`, "--redisDedupeUrl", redis.url, "--json"]);
      expect(result.code, result.stderr).toBe(0);
      const captures = JSON.parse(result.stdout) as { crawlId: string; status: number; confirms?: unknown; samePayloadAs?: unknown }[];
      const response = { url: page.url, crawlId: "v1", date: page.date };
      expect(captures.map((c) => [c.crawlId, c.status, c.confirms, c.samePayloadAs])).toEqual([["v2", 304, response, undefined], ["v1", 200, undefined, response]]);
    });

    it("three crawls: crawl 3's 304 for a URL crawl 2 stored as a revisit names crawl 1's response and requires crawl 1's WACZ only", async () => {
      expect(chainEnd.code, chainEnd.stderr.slice(-2000)).toBe(0);
      const [alias] = site.truth.aliases.added;
      const page = await recordOf("v1", "response", alias.of);
      const middle = await recordOf("v2", "revisit", alias.path);
      expect([middle.profile, middle.refersToUrl, middle.refersToDate]).toEqual([IDENTICAL, page.url, page.date]);
      const revisit = await recordOf("v3", "revisit", alias.path);
      expect([revisit.profile, revisit.refersToUrl, revisit.refersToDate, revisit.container, revisit.digest])
        .toEqual([NOT_MODIFIED, page.url, page.date, "file://v1.wacz", page.digest]);
      // Its page's stylesheet and image are revisits of crawl 1's too: crawl 2's WACZ is not needed.
      expect(await requiredWaczOf("v3")).toEqual(["v1.wacz"]);
      // `replay --list` checks every revisit of the sets against their responses: none names a revisit or nothing.
      for (const name of ["v2", "v3"]) {
        const listed = await runCli("replay", ["--list", join(cwd, "collections", name)]);
        expect([name, listed.code, listed.stderr]).toEqual([name, 0, ""]);
        expect(listed.stdout.trim().split("\n").map((l) => l.split(" ")[0])).toEqual(["v1.wacz", `${name}.wacz`]);
      }
    });
  });

  describe("replay from the multi-WACZ sets of the crawls", () => {
    let server: ReplayServer;
    let session: ReplaySession;
    beforeAll(async () => {
      server = await startReplayServer(crawlSets());
      session = await openReplaySession(server);
    }, 60_000);
    afterAll(async () => {
      await session?.close();
      await server?.close();
    });

    it("replays changed version-2 pages from the multi-WACZ set of both crawls", async () => {
      const changed = site.truth.changed[0];
      const id = changed.match(/(\d+)/)![1];
      const replayed = await session.replay({ source: "/archives/both.json", url: `${site.url}${changed}`, waitForText: `UPDATED-${id}`, timeoutMs: 45_000 });
      expect(detectReplayFailure(replayed.text)).toBeNull();
      expect(replayed.text).toContain(`UPDATED-${id}`);
    }, 120_000);

    // ReplayWeb.page opens no page at all for a revisit whose HTTP block says 304: hence notModifiedHead.
    it("replays unchanged (304) version-2 pages from the multi-WACZ set of both crawls", async () => {
      const unchanged = site.truth.unchanged[1];
      const id = unchanged.match(/(\d+)/)![1];
      const replayed = await session.replay({ source: "/archives/both.json", url: `${site.url}${unchanged}`, waitForText: `ORIGINAL-${id}`, timeoutMs: 45_000 });
      expect(detectReplayFailure(replayed.text)).toBeNull();
      expect(replayed.text).toContain(`ORIGINAL-${id}`);
    }, 120_000);

    it("replays an alias at the refresh's 304 from the multi-WACZ set of both crawls (its revisit resolves to crawl 1's response)", async () => {
      const [alias] = site.truth.aliases.unchanged;
      const id = alias.of.match(/(\d+)/)![1];
      const revisit = (await waczRecords("v2")).find((r) => r.type === "revisit" && pathOf(r.url) === alias.path)!;
      const ts = timestampOf(revisit.date);
      const replayed = await session.replay({ source: "/archives/both.json", url: `${site.url}${alias.path}`, ts, waitForText: `ORIGINAL-${id}`, timeoutMs: 45_000 });
      expect(detectReplayFailure(replayed.text)).toBeNull();
      expect(replayed.text).toContain(`ORIGINAL-${id}`);
      expect(parseReplayFrameUrl(replayed.frameUrl)?.ts).toBe(ts);
    }, 120_000);

    it("replays the three-crawl chain's page at crawl 3's 304 from the multi-WACZ set of the three crawls", async () => {
      const [alias] = site.truth.aliases.added;
      const id = alias.of.match(/(\d+)/)![1];
      const revisit = (await waczRecords("v3")).find((r) => r.type === "revisit" && pathOf(r.url) === alias.path)!;
      const ts = timestampOf(revisit.date);
      const replayed = await session.replay({ source: "/archives/three.json", url: `${site.url}${alias.path}`, ts, waitForText: `ORIGINAL-${id}`, timeoutMs: 45_000 });
      expect(detectReplayFailure(replayed.text)).toBeNull();
      expect(replayed.text).toContain(`ORIGINAL-${id}`);
      expect(parseReplayFrameUrl(replayed.frameUrl)?.ts).toBe(ts);
    }, 120_000);
  });
});

/** A response's or revisit's WARC headers, as warcio reads them. */
interface CaptureHeaders {
  type: string;
  url: string;
  date: string;
  digest: string | null;
  profile: string | null;
  refersToUrl: string | null;
  refersToDate: string | null;
  container: string | null;
}

/** The responses and revisits in a crawl's WACZ, read with warcio (as replay tools read them). */
async function waczRecords(name: string): Promise<CaptureHeaders[]> {
  const wacz = await readZip(join(cwd, "collections", name, `${name}.wacz`));
  const records: CaptureHeaders[] = [];
  for (const [path, { data }] of wacz) {
    if (!path.startsWith("archive/")) continue;
    for await (const record of new WARCParser([data])) {
      const type = record.warcType ?? "";
      if (type !== "response" && type !== "revisit") continue;
      const header = (field: string) => record.warcHeader(field) ?? null;
      records.push({
        type, url: record.warcTargetURI ?? "", date: header("WARC-Date") ?? "", digest: header("WARC-Payload-Digest"), profile: header("WARC-Profile"),
        refersToUrl: header("WARC-Refers-To-Target-URI"), refersToDate: header("WARC-Refers-To-Date"), container: header("WARC-Refers-To-Container"),
      });
    }
  }
  return records;
}

/** The WACZ files a crawl's WACZ lists in relation.requires. */
async function requiredWaczOf(name: string): Promise<string[]> {
  const wacz = await readZip(join(cwd, "collections", name, `${name}.wacz`));
  return (JSON.parse(wacz.get("datapackage.json")!.data.toString()).relation?.requires ?? []).map((r: { filename: string }) => r.filename);
}

/** A WARC-Date as the 14 digits of a replay timestamp. */
const timestampOf = (warcDate: string) => warcDate.replace(/\D/g, "").slice(0, 14);

/** A folder with the crawls' WACZ files and multi-WACZ JSON files listing them: both.json (v1, v2), three.json (v1, v2, v3). */
function crawlSets(): string {
  const dir = join(cwd, "replay");
  mkdirSync(dir, { recursive: true });
  const resources = ["v1", "v2", "v3"].map((name) => {
    const path = join(cwd, "collections", name, `${name}.wacz`);
    copyFileSync(path, join(dir, `${name}.wacz`));
    return { name: `${name}.wacz`, path: `${name}.wacz`, hash: sha256(readFileSync(path)), size: statSync(path).size };
  });
  writeFileSync(join(dir, "both.json"), JSON.stringify({ profile: "multi-wacz-package", resources: resources.slice(0, 2) }));
  writeFileSync(join(dir, "three.json"), JSON.stringify({ profile: "multi-wacz-package", resources }));
  return dir;
}
