// How far a listed page got, as pages.jsonl's loadState says it (src/crawl/pages/pageSteps.ts loadStateOf).
import { describe, expect, it } from "vitest";
import { loadStateOf } from "../../../src/crawl/pages/pageSteps.js";
import type { PageLoadResult } from "../../../src/page/pageLoadResult.js";

const loaded = (mime: string, behaviors?: PageLoadResult["behaviors"]): PageLoadResult => ({
  document: { url: "https://a.test/", status: 200, mime, resourceType: "Document", location: null, date: new Date(0) },
  title: "t", links: [], error: null, truncated: [], ...(behaviors ? { behaviors } : {}),
});

describe("loadStateOf", () => {
  it("4 for a rendered page whose behaviors finished", () => {
    expect(loadStateOf(loaded("text/html", { outcome: "finished", seconds: 1 }))).toBe(4);
  });

  it("3 for a rendered page whose behaviors timed out, were skipped or off", () => {
    expect(loadStateOf(loaded("text/html", { outcome: "timed-out", seconds: 10 }))).toBe(3);
    expect(loadStateOf(loaded("application/xhtml+xml"))).toBe(3);
  });

  it("for a page captured without a browser: 4 when behaviors are on (its template's ran and found nothing), 3 when off", () => {
    const page = { ...loaded("text/html"), capture: "static" as const };
    expect(loadStateOf(page, true)).toBe(4);
    expect(loadStateOf(page, false)).toBe(3);
    expect(loadStateOf({ ...loaded("application/pdf"), capture: "static" }, true)).toBe(2);
    expect(loadStateOf({ ...loaded("text/html"), capture: "browser" }, true)).toBe(3);
  });

  it("2 for a document the browser does not render (a PDF, an image)", () => {
    expect(loadStateOf(loaded("application/pdf"))).toBe(2);
    expect(loadStateOf(loaded("image/png"))).toBe(2);
  });
});
