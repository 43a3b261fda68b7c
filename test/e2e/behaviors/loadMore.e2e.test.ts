/**
 * The autoscroll behavior presses "Load more" to the end wherever the button is (test/helpers/loadMoreSite.ts):
 * on a page that fits its viewport, in the window of a long page, inside a scrolling <div>; until the button
 * goes away, is disabled, or a press adds nothing; with the default behaviors and with autoclick and a
 * --clickSelector that picks every button. A link leaving the page and a form's submit button labelled
 * "Show more" are never pressed. And long pages that never grow are left after one move to their end (and
 * a nudge), whatever clocks and animations they run; only what an IntersectionObserver watches is visited
 * on the way. Their cost in time is bench/behaviors.ts's figure, not asserted here. And a page busy in its own
 * script when the behaviors time out: its autoscroll ends at the deadline and logs before the page is done.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { LOAD_MORE_PAGES, SEEN_IMAGES, STALE_LAST_ITEMS, batchTargets, startLoadMoreSite, type LoadMorePage, type LoadMoreSite } from "../../helpers/loadMoreSite.js";
import { readWarcRecords } from "../../helpers/warcFile.js";

let site: LoadMoreSite;
let cwd: string;

interface Crawl {
  result: CliResult;
  collectionDir: string;
}

const BUTTON_PAGES = Object.keys(LOAD_MORE_PAGES) as LoadMorePage[];
const LONG_PAGES = ["/long.html", "/long-lazy.html"];

async function crawl(name: string, paths: string[], args: string[]): Promise<Crawl> {
  const seeds = paths.flatMap((p) => ["--url", site.url + p]);
  const result = await runCli("crawl", [...seeds, "--scopeType", "page", "--collection", name, "--cwd", cwd, "--netIdleWait", "2", "--behaviorTimeout", "120", ...args], { timeoutMs: 400_000 });
  return { result, collectionDir: join(cwd, "collections", name) };
}

/** Path + query of every URL of the site with a response or revisit record in the collection's WARC files. */
function captured(crawl: Crawl): string[] {
  const archive = join(crawl.collectionDir, "archive");
  return readdirSync(archive)
    .flatMap((f) => readWarcRecords(join(archive, f)))
    .filter((r) => r.headers.get("warc-type") === "response" || r.headers.get("warc-type") === "revisit")
    .map((r) => r.headers.get("warc-target-uri") ?? "")
    .filter((uri) => uri.startsWith(site.url))
    .map((uri) => uri.slice(site.url.length));
}

/** A page's batch requests as archived, in batch order. */
function archivedBatches(crawl: Crawl, page: LoadMorePage): string[] {
  const batch = (target: string) => Number(new URL(target, "http://x").searchParams.get("batch"));
  return captured(crawl).filter((t) => t.startsWith(`/api/${page}?`)).sort((a, b) => batch(a) - batch(b));
}

interface AutoscrollLine {
  url: string;
  rounds: number;
  moves: number;
  end: string;
}
function autoscrollLine(crawl: Crawl, path: string): AutoscrollLine | undefined {
  const lines = logLines(crawl.result.stderr).filter((l) => l.message === "autoscroll ended").map((l) => l.details as unknown as AutoscrollLine);
  return lines.find((l) => l.url === site.url + path);
}

function behaviorOutcomes(crawl: Crawl): [string, unknown][] {
  return logLines(crawl.result.stderr).filter((l) => l.context === "behavior").map((l): [string, unknown] => [l.message, l.details.url]).sort();
}

let plain: Crawl;
let clicks: Crawl;
let busy: Crawl;
/** The server's requests during each crawl (the two run one after the other). */
let plainRequests: string[];
let clickRequests: string[];

beforeAll(async () => {
  site = await startLoadMoreSite();
  cwd = mkdtempSync(join(tmpdir(), "load-more-e2e-"));
  plain = await crawl("plain", [...BUTTON_PAGES.map((p) => `/${p}.html`), ...LONG_PAGES], []);
  plainRequests = site.requests.splice(0);
  // autoclick clicks every button once (the submit button too: the page's unload is refused while behaviors run).
  clicks = await crawl("clicks", BUTTON_PAGES.map((p) => `/${p}.html`), ["--behaviors", "autoscroll,autoplay,autofetch,siteSpecific,autoclick", "--clickSelector", "button"]);
  clickRequests = site.requests.splice(0);
  // The busy page's behaviors time out while the autoscroll waits on it; the next seed then takes the tab.
  busy = await crawl("busy", ["/busy.html", "/short.html"], ["--behaviorTimeout", "2"]);
  for (const c of [plain, clicks, busy]) {
    for (const line of logLines(c.result.stderr).filter((l) => l.message === "autoscroll ended")) console.log(JSON.stringify(line.details));
  }
}, 900_000);

afterAll(async () => {
  await site?.close();
  if (cwd) rmSync(cwd, { recursive: true, force: true });
});

/** The batches a page's presses fetch: 1-4 (stale: 1-3 bring items, the 4th nothing, and there it stops). */
const EXPECTED_BATCHES = 4;

describe.each([
  ["default behaviors", () => plain, () => plainRequests],
  ["autoclick with --clickSelector button", () => clicks, () => clickRequests],
] as const)("%s", (_name, crawled, requests) => {
  it("the crawl succeeds and each page's behaviors finish", () => {
    expect(crawled().result.code, crawled().result.stderr.slice(-3000)).toBe(0);
    const pages = crawled() === plain ? [...BUTTON_PAGES.map((p) => `/${p}.html`), ...LONG_PAGES] : BUTTON_PAGES.map((p) => `/${p}.html`);
    expect(behaviorOutcomes(crawled())).toEqual(pages.map((p) => ["behaviors finished", site.url + p]).sort());
  });

  it.each(BUTTON_PAGES)("/%s.html: every batch fetched once, in order, and archived", (page) => {
    const served = requests().filter((t) => t.startsWith(`/api/${page}?`));
    // autoclick presses each button once, whenever its turn comes (after the submit button's): on the page whose
    // button stays, that press may come after ours ended, and fetch the 5th batch. Ours stop at the 4th.
    const extra = crawled() === clicks && page === "stale" && served.length === EXPECTED_BATCHES + 1 ? 1 : 0;
    const expected = batchTargets(page, EXPECTED_BATCHES + extra);
    expect(served).toEqual(expected);
    expect(archivedBatches(crawled(), page)).toEqual(expected);
    expect(autoscrollLine(crawled(), `/${page}.html`)?.end).toBe("stopped growing");
  });

  it("neither the link leaving the page nor the form's submit button is pressed", () => {
    expect(requests().filter((t) => t.includes("/elsewhere") || t.includes("/submitted"))).toEqual([]);
  });
});

describe("rounds with the default behaviors", () => {
  it.each(BUTTON_PAGES)("/%s.html: a round a batch that brought items", (page) => {
    expect(autoscrollLine(plain, `/${page}.html`)?.rounds).toBe(page === "stale" ? STALE_LAST_ITEMS : EXPECTED_BATCHES);
  });
});

describe("long pages that never grow", () => {
  it("with a clock, an animation, a timeout loop and a debounced scroll listener: one move to the end, a nudge (2 moves), no round", () => {
    const line = autoscrollLine(plain, "/long.html");
    expect([line?.rounds, line?.end, line?.moves]).toEqual([0, "did not grow", 3]);
  });

  it("with three images an IntersectionObserver loads: a move to each, one to the end, a nudge; all three archived", () => {
    const line = autoscrollLine(plain, "/long-lazy.html");
    expect([line?.rounds, line?.end, line?.moves]).toEqual([0, "did not grow", 6]);
    expect(captured(plain).filter((t) => t.startsWith("/img/")).sort()).toEqual(SEEN_IMAGES);
  });
});

describe("a page busy in its own script when the behaviors time out", () => {
  it("its autoscroll ends at the deadline and logs before the page is done: nothing of it after", () => {
    expect(busy.result.code, busy.result.stderr.slice(-3000)).toBe(0);
    const lines = logLines(busy.result.stderr);
    const url = `${site.url}/busy.html`;
    expect(behaviorOutcomes(busy)).toEqual([["behaviors finished", `${site.url}/short.html`], ["behaviors timed out", url]]);
    const ended = lines.findIndex((l) => l.message === "autoscroll ended" && l.details.url === url);
    const crawledAt = lines.findIndex((l) => l.message === "page crawled" && l.details.url === url);
    expect(lines[ended]?.details.end).toBe("deadline");
    expect(crawledAt).toBeGreaterThan(ended);
    expect(lines.filter((l) => l.context === "behaviorScript" && l.message === "autoscroll ended").map((l) => l.details.end).sort()).toEqual(["deadline", "stopped growing"]);
  });
});
