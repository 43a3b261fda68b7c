// http:// pages the browser loads over https:// by itself (HTTPS Upgrades; HSTS a host sent before): each is
// crawled on its first attempt, listed under the URL it was given or linked as (a seed also under the https://
// URL it landed at, as any redirected seed), replays from that URL, and the browser's internal redirect is not
// stored as if the server had sent it.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HSTS_HOST, pageText, startUpgradingSite, UPGRADED_HOST, type UpgradingSite } from "../../../fixtures/upgradingSite.js";
import { logLines, NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { listedPages } from "../../helpers/pageLists.js";
import { replayPage, startReplayServer, type ReplayServer } from "../../helpers/replay.js";
import { httpHeader, httpStatus, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";
import { readZip } from "../../helpers/zip.js";

let site: UpgradingSite;
let cwd: string;
let result: CliResult;
let records: RawRecord[] = [];
let replay: ReplayServer;

const SEED = `http://${UPGRADED_HOST}/`;

/** Chromium upgrades only from port 80 to port 443, which only root may listen on. */
const canListenOnDefaultPorts = process.getuid?.() === 0;

describe.skipIf(!canListenOnDefaultPorts)("http:// pages the browser upgrades to https:// (needs root: ports 80 and 443)", () => {
  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), "https-upgrade-"));
    site = await startUpgradingSite(cwd);
    result = await runCli("crawl", [
      "--url", SEED, "--scopeType", "any", "--depth", "2", "--collection", "upgraded", "--cwd", cwd, "--workers", "1",
      "--generateWACZ", "--netIdleWait", "1", "--logLevel", "debug,info,warn,error", "--context", "capture,page,crawl", "--statsFilename", join(cwd, "stats.json"), ...NO_BEHAVIORS, ...site.crawlFlags,
    ], { timeoutMs: 110_000, env: site.crawlEnv });
    replay = await startReplayServer(join(cwd, "collections", "upgraded"));
    // A failed crawl writes no WACZ: its exit code and log are what the first test shows.
    if (result.code !== 0) return;
    const wacz = await readZip(join(cwd, "collections", "upgraded", "upgraded.wacz"));
    records = [...wacz.keys()].filter((name) => name.startsWith("archive/")).flatMap((name) => {
      const copy = join(cwd, name.replace("/", "-"));
      writeFileSync(copy, wacz.get(name)?.data ?? Buffer.alloc(0));
      return readWarcRecords(copy);
    });
  }, 120_000);

  afterAll(async () => {
    await replay?.close();
    await site?.close();
    rmSync(cwd, { recursive: true, force: true });
  });

  it("crawls each page on its first attempt, none failed", () => {
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(JSON.parse(readFileSync(join(cwd, "stats.json"), "utf8"))).toMatchObject({ crawled: 4, failed: 0, queued: 0, pending: 0, status: "done" });
    const logged = logLines(result.stderr);
    expect(logged.filter((l) => l.context === "page" && l.message === "page failed, will retry")).toEqual([]);
    expect(logged.filter((l) => l.message === "page crawled").map((l) => l.details.url).sort()).toEqual(
      [SEED, `http://${UPGRADED_HOST}/linked.html`, `https://${HSTS_HOST}/`, `http://${HSTS_HOST}/later.html`].sort(),
    );
    // Both ways the browser upgrades by itself were taken: HTTPS Upgrades first, HSTS once the host had sent it.
    expect(logged.filter((l) => l.message === "the browser redirected the page by itself: followed, not stored").map((l) => [l.details.url, l.details.to, l.details.reason]).sort()).toEqual([
      [SEED, `https://${UPGRADED_HOST}/`, "HttpsUpgrades"],
      [`http://${UPGRADED_HOST}/linked.html`, `https://${UPGRADED_HOST}/linked.html`, "HttpsUpgrades"],
      [`http://${HSTS_HOST}/later.html`, `https://${HSTS_HOST}/later.html`, "HSTS"],
    ].sort());
    // The browser never asked an http:// URL: each was upgraded before it left.
    expect(site.requests.filter((r) => r.startsWith("http:"))).toEqual([]);
  });

  it("lists each page under the URL given or linked, the seed also under the https:// URL it landed at", () => {
    const listed = listedPages(join(cwd, "collections", "upgraded")).map((p) => [p.url, p.status, p.title]).sort();
    expect(listed).toEqual([
      [SEED, 200, pageText("https", UPGRADED_HOST, "/")],
      [`https://${UPGRADED_HOST}/`, 200, pageText("https", UPGRADED_HOST, "/")],
      [`http://${UPGRADED_HOST}/linked.html`, 200, pageText("https", UPGRADED_HOST, "/linked.html")],
      [`https://${HSTS_HOST}/`, 200, pageText("https", HSTS_HOST, "/")],
      [`http://${HSTS_HOST}/later.html`, 200, pageText("https", HSTS_HOST, "/later.html")],
    ].sort());
  });

  it("stores the https:// answers and no internal redirect", () => {
    const responses = records.filter((r) => r.headers.get("warc-type") === "response");
    // HSTS's made-up 307 pauses in the Fetch domain as if a server had answered; HTTPS Upgrades' never does.
    expect(responses.filter((r) => httpHeader(r, "non-authoritative-reason") !== undefined)).toEqual([]);
    expect(responses.map((r) => [r.headers.get("warc-target-uri"), httpStatus(r)]).filter(([u]) => !String(u).endsWith("/favicon.ico")).sort()).toEqual([
      [`https://${UPGRADED_HOST}/`, 200],
      [`https://${UPGRADED_HOST}/linked.html`, 200],
      [`https://${HSTS_HOST}/`, 200],
      [`https://${HSTS_HOST}/later.html`, 200],
    ].sort());
  });

  it.each([
    [SEED, UPGRADED_HOST, "/"],
    [`http://${UPGRADED_HOST}/linked.html`, UPGRADED_HOST, "/linked.html"],
    [`http://${HSTS_HOST}/later.html`, HSTS_HOST, "/later.html"],
  ])("replays %s from the URL given", async (url, host, path) => {
    expect(result.code).toBe(0);
    const replayed = await replayPage(replay, { source: "/archives/upgraded.wacz", url });
    expect(replayed.text.split("\n")[0]).toBe(pageText("https", host, path));
  }, 60_000);
});
