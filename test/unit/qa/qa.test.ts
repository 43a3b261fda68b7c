/** QA's parts that need no browser: file names, scores, replay URLs, the flags. */
import { describe, expect, it } from "vitest";
import { PNG } from "pngjs";
import { buildQaProgram, qaOptionsOf, QaFlagError } from "../../../src/cli/qa.js";
import { assess } from "../../../src/qa/assess.js";
import { compareResources, screenshotMatch, textMatch } from "../../../src/qa/compare.js";
import { withQaNeeds } from "../../../src/qa/crawlQa.js";
import { pageFileName, worstFirst } from "../../../src/qa/pageResult.js";
import { pagesToCheck } from "../../../src/qa/qaRun.js";
import { archivedUrlOf } from "../../../src/qa/replayTraffic.js";
import { pagesOfList, staticallyCaptured } from "../../../src/qa/waczPages.js";
import { solidPng } from "../../../fixtures/qaSite.js";

describe("pageFileName", () => {
  it("keeps letters, digits, '.', '-', '_' of host and path, cut to 80, plus a hash of the whole URL", () => {
    expect(pageFileName("http://127.0.0.1:8080/qa/index.html")).toMatch(/^127\.0\.0\.1_8080_qa_index\.html-[0-9a-f]{10}$/);
    const hostile = pageFileName("https://example.com/../../etc/passwd?x=<script>&y=\u0000/%2e%2e");
    expect(hostile).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(hostile.startsWith(".")).toBe(false);
    const long = pageFileName("http://a.test/" + "x".repeat(500));
    expect(long.length).toBe(80 + 11);
    // Two URLs that read the same once made safe still get two names.
    expect(pageFileName("http://a.test/a?b")).not.toBe(pageFileName("http://a.test/a&b"));
  });
});

describe("scores", () => {
  it("text: 1 - Levenshtein distance / longer length; two empty texts match", () => {
    expect(textMatch("", "")).toBe(1);
    expect(textMatch("abcd", "abcd")).toBe(1);
    expect(textMatch("abcd", "abxd")).toBe(0.75);
    expect(textMatch("abcd", "")).toBe(0);
  });

  it("screenshots: share of matching pixels; a part only one image has counts as different", () => {
    const red = solidPng(10, 10, [255, 0, 0]);
    expect(screenshotMatch(red, red).match).toBe(1);
    expect(screenshotMatch(red, solidPng(10, 10, [0, 0, 255])).match).toBe(0);
    const half = new PNG({ width: 10, height: 10 });
    for (let i = 0; i < 100; i++) half.data.set(i < 50 ? [255, 0, 0, 255] : [0, 0, 255, 255], i * 4);
    expect(screenshotMatch(red, PNG.sync.write(half)).match).toBe(0.5);
    expect(screenshotMatch(red, solidPng(10, 5, [255, 0, 0])).match).toBe(0.5);
    expect(screenshotMatch(red, red).diff).toBeNull();
    expect(PNG.sync.read(screenshotMatch(red, red, true).diff!).width).toBe(10);
  });

  it("resources: what the replay could not answer is missing, unless it failed live as well", () => {
    const replayed = [
      { url: "http://a.test/", status: 200, type: "Document" },
      { url: "http://a.test/gone.png", status: 404, type: "Image" },
      { url: "http://a.test/was-404.css", status: 404, type: "Stylesheet" },
      { url: "http://b.test/x.js", status: 0, type: "Script", error: "net::ERR_FAILED" },
    ];
    const live = { "http://a.test/": { status: 200 }, "http://a.test/gone.png": { status: 200 }, "http://a.test/was-404.css": { status: 404 } };
    expect(compareResources(replayed, live)).toEqual({ crawlGood: 2, crawlBad: 1, replayGood: 1, replayBad: 3, missing: ["http://a.test/gone.png", "http://b.test/x.js"], match: 1 / 3 });
    expect(compareResources(replayed, null)).toMatchObject({ crawlGood: null, crawlBad: null, missing: ["http://a.test/gone.png", "http://a.test/was-404.css", "http://b.test/x.js"], match: 0.25 });
    expect(compareResources([], null).match).toBe(1);
  });

  it("worst first, ties in URL order", () => {
    const r = (url: string, overall: number) => ({ url, scores: { overall } });
    expect(worstFirst([r("b", 1), r("c", 0.5), r("a", 1), r("d", 0.2)]).map((x) => x.url)).toEqual(["d", "c", "a", "b"]);
  });
});

describe("assess", () => {
  const page = { url: "http://a.test/p", ts: "2026-01-01T00:00:00.000Z", title: "P", text: "hello world" };
  const shot = solidPng(4, 4, [0, 0, 0]);
  const replayed = {
    frameUrl: "http://127.0.0.1:9/replay/w/c/20260101000000mp_/http://a.test/p", screenshot: shot, text: "hello world",
    requests: [{ url: "http://a.test/p", status: 200, type: "Document" }, { url: "http://a.test/i.png", status: 404, type: "Image" }],
    liveScreenshot: shot, liveText: null, livePageInfo: JSON.stringify({ urls: { "http://a.test/p": { status: 200 }, "http://a.test/i.png": { status: 200 } } }), loadMs: 1234,
  };

  it("scores a replayed page by its worst part", () => {
    const { result } = assess(page, replayed);
    expect(result).toEqual({
      url: page.url, ts: page.ts, title: "P", replayed: true,
      scores: { screenshot: 1, text: 1, resources: 0.5, overall: 0.5 },
      resourceCounts: { crawlGood: 2, crawlBad: 0, replayGood: 1, replayBad: 1 },
      missing: ["http://a.test/i.png"], loadSeconds: 1.234,
    });
  });

  it("a page whose document the archive lacks scores 0 throughout, and is itself missing", () => {
    const notFound = { ...replayed, requests: [{ url: "http://a.test/p", status: 404, type: "Document" }], text: "Archived Page Not Found" };
    const { result } = assess(page, notFound);
    expect(result).toMatchObject({ replayed: false, scores: { screenshot: 0, text: 0, resources: 0, overall: 0 }, missing: ["http://a.test/p"] });
  });

  it("a page captured without a browser is not scored on its text (its crawl text is its document's; replay runs its scripts), its requests are", () => {
    const { result } = assess({ ...page, capturedStatically: true }, { ...replayed, liveScreenshot: null, text: "hello world and what the script wrote" });
    expect(result.scores).toEqual({ screenshot: null, text: null, resources: 0.5, overall: 0.5 });
    expect(assess(page, { ...replayed, liveScreenshot: null, text: "hello world and what the script wrote" }).result.scores.text).toBeLessThan(0.5);
  });

  it("without a crawl screenshot or text, the scores that exist decide", () => {
    const { result } = assess({ url: page.url }, { ...replayed, liveScreenshot: null, requests: replayed.requests.slice(0, 1) });
    expect(result.scores).toEqual({ screenshot: null, text: null, resources: 1, overall: 1 });
  });
});

describe("replay URLs", () => {
  it("give the archived URL of the replayed page's requests, not of the replay's own", () => {
    expect(archivedUrlOf("http://127.0.0.1:9/replay/w/id-eecd/:37a8ee/20261126085629mp_/http://127.0.0.1:41117/qa/whole.html?a=/b"))
      .toEqual({ collection: "id-eecd", timestamp: "20261126085629", url: "http://127.0.0.1:41117/qa/whole.html?a=/b", prefix: "http://127.0.0.1:9/replay/w/id-eecd/:37a8ee/" });
    expect(archivedUrlOf("http://127.0.0.1:9/replay/w/c/2026im_/https://x.test/i.png")).toEqual({ collection: "c", timestamp: "2026", url: "https://x.test/i.png", prefix: "http://127.0.0.1:9/replay/w/c/" });
    expect(archivedUrlOf("http://127.0.0.1:9/replay/w/c/mp_/urn:view:http://x.test/")?.url).toBe("urn:view:http://x.test/");
    expect(archivedUrlOf("http://127.0.0.1:9/replay/w/api/c/id-eecd?all=1")).toBeNull();
    expect(archivedUrlOf("http://127.0.0.1:9/replay/static/wombat.js")).toBeNull();
    expect(archivedUrlOf("http://127.0.0.1:9/replay/?source=x")).toBeNull();
  });
});

describe("page lists", () => {
  it("read pages.jsonl lines with a url, headers and bad lines left out", () => {
    const text = '{"format": "json-pages-1.0", "id": "pages"}\n{"url":"http://a.test/","ts":"2026-01-01T00:00:00Z","title":"A","text":"hi"}\nnot json\n{"url":7}\n\n{"url":"http://a.test/doc.pdf","mime":"application/pdf"}\n';
    expect(pagesOfList(text)).toEqual([
      { url: "http://a.test/", ts: "2026-01-01T00:00:00Z", id: undefined, title: "A", mime: undefined, text: "hi" },
      { url: "http://a.test/doc.pdf", ts: undefined, id: undefined, title: undefined, mime: "application/pdf", text: undefined },
    ]);
  });

  it("a hybrid crawl's capture report says which pages were captured without a browser: a page's last line counts", async () => {
    async function* lines() {
      yield '{"url":"http://a.test/1","capture":"static","template":"t1"}';
      yield '{"url":"http://a.test/2","capture":"browser","template":"t1","purpose":"learn"}';
      yield "not json";
      yield '{"url":"http://a.test/3","capture":"static","template":"t1"}';
      yield '{"url":"http://a.test/3","capture":"browser","template":"t1","purpose":"fallen-back"}';
    }
    expect([...(await staticallyCaptured(lines()))]).toEqual(["http://a.test/1"]);
  });

  it("--include, --exclude and --pages choose the pages, in the listed order", () => {
    const pages = ["http://a.test/1", "http://a.test/2", "http://b.test/3", "http://a.test/4"].map((url) => ({ url }));
    expect(pagesToCheck(pages, { include: [/a\.test/], exclude: [/\/2$/], pageLimit: 0 }).map((p) => p.url)).toEqual(["http://a.test/1", "http://a.test/4"]);
    expect(pagesToCheck(pages, { include: [], exclude: [], pageLimit: 2 }).map((p) => p.url)).toEqual(["http://a.test/1", "http://a.test/2"]);
  });
});

describe("flags", () => {
  const parse = (args: string[]) => qaOptionsOf(buildQaProgram().exitOverride().configureOutput({ writeErr: () => undefined }).parse(args, { from: "user" }).opts(), new Date("2026-11-26T09:30:00Z"));

  it("qa takes browsertrix-crawler's names for the limit and the page regexes", () => {
    const options = parse(["--qaSource", "x.wacz", "--pageLimit", "3", "--scopeIncludeRx", "a", "--exclude", "b", "--cwd", "/out"]);
    expect(options).toMatchObject({ source: "x.wacz", pageLimit: 3, include: [/a/], exclude: [/b/], threshold: 0.9, outputDir: "/out/collections/qa-20261126093000", debugImageDiff: false });
    expect(parse(["--qaSource", "x.wacz", "--pages", "2", "--limit", "5"]).pageLimit).toBe(2);
    expect(() => parse(["--qaSource", "x.wacz", "--qaThreshold", "1.5"])).toThrow(QaFlagError);
    expect(() => parse(["--qaSource", "x.wacz", "--collection", "../up"])).toThrow(QaFlagError);
    expect(() => parse(["--pages", "2"])).toThrow(/qaSource/);
  });

  it("crawl --qa adds a WACZ, the viewport screenshot and the text record to what was asked", () => {
    expect(withQaNeeds({ qa: true })).toMatchObject({ generateWACZ: true, text: ["to-warc"], screenshot: ["view"] });
    expect(withQaNeeds({ qa: true, text: ["to-pages,to-warc"], screenshot: ["thumbnail"] })).toMatchObject({ text: ["to-pages,to-warc"], screenshot: ["thumbnail", "view"] });
    expect(withQaNeeds({ text: ["to-pages"] })).toEqual({ text: ["to-pages"] });
  });

  it("crawl --qa --captureMode hybrid adds no screenshot (most pages are never rendered): its pages are scored on text and requests", () => {
    expect(withQaNeeds({ qa: true, captureMode: "hybrid" })).toEqual({ qa: true, captureMode: "hybrid", generateWACZ: true, text: ["to-warc"], screenshot: [] });
    expect(withQaNeeds({ qa: true, captureMode: "browser" })).toMatchObject({ screenshot: ["view"] });
  });
});
