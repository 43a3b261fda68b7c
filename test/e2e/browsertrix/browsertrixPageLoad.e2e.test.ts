import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KnownDevices } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { hangHeld, PAGE_LOAD } from "../../helpers/hostile/pageLoad.js";
import { httpHeader, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// browsertrix-crawler's page-load flags, each shown by what it changes in the archive of a loopback site.
// Crawls whose flags do not get in each other's way serve several tests (started by the first test that
// needs one); crawls that mostly wait on their pages run two at a time. The never-ending requests are timed
// in one list for the whole process (hangHeld): the crawls of the pages making them (--waitUntil's, then
// --netIdleMaxRequests') never run side by side.

let site: FaultySite;
/** The --netIdleMaxRequests crawls' own site: --extraChromeArgs' tests count its image's requests. */
let netIdleSite: FaultySite;
let cwd: string;
beforeAll(async () => {
  site = await startFaultySite(1, {});
  netIdleSite = await startFaultySite(1, {});
  cwd = mkdtempSync(join(tmpdir(), "crawl-btx-pageload-"));
});
afterAll(async () => {
  await site?.close();
  await netIdleSite?.close();
  rmSync(cwd, { recursive: true, force: true });
});

/** Started on first use, then the same promise for every test that reads it. */
function shared<T>(start: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => (started ??= start());
}

interface Crawl {
  result: CliResult;
  records: RawRecord[];
  /** Path and query of every response record, sorted. */
  responses: string[];
  /** Pages listed in pages.jsonl: path to status. */
  pages: Record<string, number>;
  ms: number;
}

let collections = 0;

/** Crawl only the given pages of the site (scope: page), no behaviors. */
async function crawl(paths: string[], args: string[], env: NodeJS.ProcessEnv = {}, on: FaultySite = site): Promise<Crawl> {
  const collection = `pl-${++collections}`;
  const seeds = paths.flatMap((p) => ["--url", on.url + p]);
  const started = Date.now();
  const result = await runCli("crawl", [...seeds, "--scopeType", "page", "--cwd", cwd, "--collection", collection, ...NO_BEHAVIORS, ...args], { timeoutMs: 180_000, env });
  const ms = Date.now() - started;
  const dir = join(cwd, "collections", collection);
  const archive = join(dir, "archive");
  const records = existsSync(archive) ? readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f))) : [];
  const local = (uri: string) => uri.replace(on.url, "");
  const responses = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => local(r.headers.get("warc-target-uri") ?? "")).sort();
  const pagesFile = join(dir, "pages", "pages.jsonl");
  const pages: Record<string, number> = {};
  if (existsSync(pagesFile)) {
    for (const line of readFileSync(pagesFile, "utf8").trim().split("\n").slice(1)) {
      const page = JSON.parse(line) as { url: string; status?: number };
      pages[local(page.url)] = page.status ?? 0;
    }
  }
  return { result, records, responses, pages, ms };
}

const requestsOf = (c: Crawl) => c.records.filter((r) => r.headers.get("warc-type") === "request");
const withoutQuery = (paths: string[]) => paths.map((p) => p.split("?")[0]);

/** --waitUntil networkidle0 and --mobileDevice: neither changes what the other shows. */
const idle0Mobile = shared(() =>
  crawl([PAGE_LOAD.slowImagePage, PAGE_LOAD.busyPage, PAGE_LOAD.devicePage],
    ["--netIdleWait", "0", "--pageLoadTimeout", "15", "--waitUntil", "networkidle0", "--mobileDevice", "Pixel 2", "--userAgentSuffix", "+Zimit"]));

/** --lang and --userAgentSuffix, and the device page loaded without --mobileDevice (as a desktop). */
const langDesktop = shared(() =>
  crawl([PAGE_LOAD.langPage, PAGE_LOAD.imagePage, PAGE_LOAD.devicePage], ["--lang", "de-CH", "--userAgentSuffix", "+MyCrawler (mailto:crawl@example.org)"]));

interface NetIdleCrawls {
  /** --netIdleMaxRequests 1 and --extraChromeArgs turning images off. */
  one: Crawl;
  oneHeld: number[];
  /** --netIdleMaxRequests 0 (the default) and CHROME_FLAGS turning images off. */
  zero: Crawl;
  zeroHeld: number[];
  /** Requests of the image: before, after the first crawl, after the second. */
  imageHits: number[];
}

/**
 * One after the other (hangHeld times both): the image page first, so that the page with the never-ending
 * request is the crawl's last, as when it is crawled alone.
 */
const netIdleCrawls = shared(async (): Promise<NetIdleCrawls> => {
  const seeds = [PAGE_LOAD.imagePage, PAGE_LOAD.oneHangPage];
  const imageHits = () => netIdleSite.hits.get(PAGE_LOAD.image) ?? 0;
  const hits = [imageHits()];
  hangHeld.length = 0;
  const one = await crawl(seeds, ["--netIdleWait", "8", "--netIdleMaxRequests", "1", "--extraChromeArgs=--blink-settings=imagesEnabled=false"], {}, netIdleSite);
  const oneHeld = [...hangHeld];
  hits.push(imageHits());
  hangHeld.length = 0;
  const zero = await crawl(seeds, ["--netIdleWait", "8"], { CHROME_FLAGS: " --mute-audio  --blink-settings=imagesEnabled=false " }, netIdleSite);
  hits.push(imageHits());
  return { one, oneHeld, zero, zeroHeld: [...hangHeld], imageHits: hits };
});

/** The image page's responses in a crawl that also had the page with the never-ending request. */
const imagePageResponses = (c: Crawl) => c.responses.filter((p) => !["/favicon.ico", PAGE_LOAD.oneHangPage, PAGE_LOAD.lateAfterHang].includes(p));

// Not concurrent with the suites after it (its tests are, with each other): its pages' never-ending requests
// are over before the --netIdleMaxRequests crawls time theirs.
describe("--waitUntil", () => {
  const seeds = [PAGE_LOAD.slowImagePage, PAGE_LOAD.busyPage];
  const common = ["--netIdleWait", "0", "--pageLoadTimeout", "8"];

  it.concurrent("domcontentloaded: the page is left before its late image and its script's late request", async () => {
    const c = await crawl(seeds, [...common, "--waitUntil", "domcontentloaded"]);
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.pages).toEqual({ [PAGE_LOAD.slowImagePage]: 200, [PAGE_LOAD.busyPage]: 200 });
    expect(c.responses).toContain(PAGE_LOAD.slowImagePage);
    expect(c.responses).not.toContain(PAGE_LOAD.slowImage);
    expect(c.responses).not.toContain(PAGE_LOAD.late);
  }, 200_000);

  it.concurrent("by default (load) the late image is archived; the request a script makes 5 s after load is not waited for past --netIdleWait", async () => {
    const c = await crawl(seeds, common);
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.responses).toContain(PAGE_LOAD.slowImage);
    expect(c.responses).not.toContain(PAGE_LOAD.late);
  }, 200_000);

  it.concurrent("load and networkidle2 (repeated flag): two never-ending requests still count as idle", async () => {
    const c = await crawl(seeds, [...common, "--waitUntil", "load", "--waitUntil", "networkidle2"]);
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.responses).toContain(PAGE_LOAD.slowImage);
    expect(c.responses).not.toContain(PAGE_LOAD.late);
  }, 200_000);

  it.concurrent("networkidle0: the navigation waits (to --pageLoadTimeout) while anything is in flight, so the late request is archived and the page kept", async () => {
    // The late request comes 5 s after load: a longer page timeout than the others' 8 s, so it is always inside.
    // The same crawl loads the device page as a Pixel 2 (--mobileDevice's test below).
    const c = await idle0Mobile();
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.pages).toEqual({ [PAGE_LOAD.slowImagePage]: 200, [PAGE_LOAD.busyPage]: 200, [PAGE_LOAD.devicePage]: 200 });
    expect(c.responses).toContain(PAGE_LOAD.slowImage);
    expect(c.responses).toContain(PAGE_LOAD.late);
  }, 200_000);

  it.concurrent("an unknown event is one line and exit code 4, before anything is crawled", async () => {
    const c = await crawl([PAGE_LOAD.imagePage], ["--waitUntil", "load,networkidle"]);
    expect(c.result.code).toBe(4);
    expect(c.result.stderr.trim().split("\n")).toEqual([
      `crawl: --waitUntil takes a comma-separated list of load, domcontentloaded, networkidle0, networkidle2; got "networkidle"`,
    ]);
    expect(c.records).toEqual([]);
  });
});

describe.concurrent("--netIdleMaxRequests", () => {
  it("1: a page with one never-ending request is done without waiting out --netIdleWait", async () => {
    const { one: c, oneHeld } = await netIdleCrawls();
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.pages).toEqual({ [PAGE_LOAD.imagePage]: 200, [PAGE_LOAD.oneHangPage]: 200 });
    // The request made 3 s after load comes after the page was done.
    expect(c.responses).not.toContain(PAGE_LOAD.lateAfterHang);
    expect(oneHeld).toHaveLength(1);
    expect(oneHeld[0]).toBeLessThan(5000);
  }, 200_000);

  it("0 (the default): the net-idle wait waits out --netIdleWait while the request hangs, and gets what comes meanwhile", async () => {
    const { zero: c, zeroHeld } = await netIdleCrawls();
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.responses).toContain(PAGE_LOAD.lateAfterHang);
    expect(zeroHeld).toHaveLength(1);
    // The wait is paid once, after the behaviors, and its 8 s count from its start: the request the load
    // handler made may reach the server a moment after that (7,972 ms seen), so not exactly 8,000.
    expect(zeroHeld[0]).toBeGreaterThanOrEqual(7500);
  }, 200_000);

  it("a value that is not a count is one line and exit code 4", async () => {
    const c = await crawl([PAGE_LOAD.imagePage], ["--netIdleMaxRequests", "two"]);
    expect(c.result.code).toBe(4);
    expect(c.result.stderr.trim().split("\n")).toEqual([`crawl: --netIdleMaxRequests must be a whole number of requests (0 or more), got "two"`]);
  });
});

describe.concurrent("--lang and --userAgentSuffix", () => {
  it("every request carries the language, in the WARC and as the server got it; the page's navigator.language is it", async () => {
    const c = await langDesktop();
    expect(c.result.code, c.result.stderr).toBe(0);
    const requests = requestsOf(c);
    expect(requests.length).toBeGreaterThanOrEqual(5);
    for (const request of requests) expect(httpHeader(request, "accept-language"), request.headers.get("warc-target-uri")).toBe("de-CH,de;q=0.9");
    expect(c.responses).toContain(`${PAGE_LOAD.echo}?nav=de-CH`);
    const page = c.records.find((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === site.url + PAGE_LOAD.langPage);
    expect(page?.payload.toString()).toContain(`<p id="accept-language">de-CH,de;q=0.9</p>`);
  }, 200_000);

  it("every request (pages, stylesheet, images, script fetches) has the browser's user agent with the suffix", async () => {
    const c = await langDesktop();
    const agents = new Set(requestsOf(c).map((r) => httpHeader(r, "user-agent")));
    expect(agents.size).toBe(1);
    const [agent] = [...agents];
    expect(agent).toMatch(/^Mozilla\/5\.0 \(X11; Linux x86_64\) .*Chrome\/[\d.]+ Safari\/537\.36 \+MyCrawler \(mailto:crawl@example\.org\)$/);
    expect(withoutQuery(requestsOf(c).map((r) => (r.headers.get("warc-target-uri") ?? "").replace(site.url, ""))).sort()).toEqual(
      expect.arrayContaining([PAGE_LOAD.langPage, PAGE_LOAD.echo, PAGE_LOAD.image, PAGE_LOAD.imagePage, PAGE_LOAD.css]),
    );
  }, 200_000);

  it("a language that is not one is one line and exit code 4", async () => {
    const bad = await crawl([PAGE_LOAD.imagePage], ["--lang", "english_US"]);
    expect(bad.result.code).toBe(4);
    expect(bad.result.stderr.trim().split("\n")).toEqual([
      `crawl: --lang must be a language code such as en, de or pt-BR (BCP 47: ISO 639 language, optional -region), got "english_US"`,
    ]);
  });
});

describe.concurrent("--extraChromeArgs", () => {
  it("switches reach Chromium: with images turned off in Blink, the page's image is never fetched", async () => {
    const { one: c, imageHits } = await netIdleCrawls();
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(imagePageResponses(c)).toEqual([PAGE_LOAD.css, PAGE_LOAD.imagePage].sort());
    expect(imageHits[1]).toBe(imageHits[0]);
  }, 200_000);

  it("the environment's CHROME_FLAGS (browsertrix-crawler's) reach Chromium too, split at spaces", async () => {
    const { zero: c, imageHits } = await netIdleCrawls();
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(imagePageResponses(c)).toEqual([PAGE_LOAD.css, PAGE_LOAD.imagePage].sort());
    expect(imageHits[2]).toBe(imageHits[1]);
  }, 200_000);
});

// Last, and not concurrent with the suites before it: run alone, its crawl of the busy page (shared with
// --waitUntil networkidle0) keeps clear of the --netIdleMaxRequests crawls.
describe("--mobileDevice", () => {
  it.concurrent("every page is loaded as the device: its width, touch, media queries and user agent (with the suffix, as zimit runs it)", async () => {
    const c = await idle0Mobile();
    expect(c.result.code, c.result.stderr).toBe(0);
    const pixel2 = KnownDevices["Pixel 2"];
    expect(c.responses).toContain(`${PAGE_LOAD.width}?w=${pixel2.viewport.width}&touch=true`);
    expect(c.responses).toContain(PAGE_LOAD.small);
    expect(c.responses).not.toContain(PAGE_LOAD.large);
    for (const request of requestsOf(c)) expect(httpHeader(request, "user-agent")).toBe(`${pixel2.userAgent} +Zimit`);
  }, 200_000);

  it.concurrent("without it, the same page is loaded as a desktop", async () => {
    const c = await langDesktop();
    expect(c.result.code, c.result.stderr).toBe(0);
    expect(c.responses).toContain(`${PAGE_LOAD.width}?w=1366&touch=false`);
    expect(c.responses).toContain(PAGE_LOAD.large);
    expect(c.responses).not.toContain(PAGE_LOAD.small);
  }, 200_000);

  it.concurrent("an unknown device is one line and exit code 4, saying where the names come from", async () => {
    const c = await crawl([PAGE_LOAD.imagePage], ["--mobileDevice", "Pixel 99"]);
    expect(c.result.code).toBe(4);
    const lines = c.result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^crawl: --mobileDevice: unknown device "Pixel 99" \(like it: "Pixel 2", .*\); the names are those of puppeteer's KnownDevices/);
  });
});
