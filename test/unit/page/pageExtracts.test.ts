/**
 * Page text and screenshots against a scripted DevTools session: what is kept, and that a screenshot
 * that fails or hangs past its deadline is a warning, never a failed page or a stuck one.
 */
import type { CDPSession, Page, Protocol } from "puppeteer-core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { takePageExtracts } from "../../../src/page/pageExtracts.js";
import { textOfSnapshot } from "../../../src/page/pageText.js";
import { logger } from "../../../src/log/logger.js";

/** body > [h1 "Title text", script "code()", p " Para ", footer "Foot"], and an iframe document with "Inner". */
const SNAPSHOT: Protocol.DOMSnapshot.CaptureSnapshotResponse = {
  strings: ["#document", "HTML", "BODY", "H1", "Title text", "SCRIPT", "code()", "P", " Para ", "FOOTER", "Foot", "#text", "Inner", "  "],
  documents: [
    {
      nodes: {
        nodeType: [9, 1, 1, 1, 3, 1, 3, 1, 3, 1, 3, 3],
        nodeName: [0, 1, 2, 3, 11, 5, 11, 7, 11, 9, 11, 11],
        nodeValue: [-1, -1, -1, -1, 4, -1, 6, -1, 8, -1, 10, 13],
        parentIndex: [-1, 0, 1, 2, 3, 2, 5, 2, 7, 2, 9, 2],
      },
    } as unknown as Protocol.DOMSnapshot.DocumentSnapshot,
    {
      nodes: { nodeType: [9, 1, 3], nodeName: [0, 2, 11], nodeValue: [-1, -1, 12], parentIndex: [-1, 0, 1] },
    } as unknown as Protocol.DOMSnapshot.DocumentSnapshot,
  ],
};

const METRICS = {
  cssVisualViewport: { pageX: 0, pageY: 0, clientWidth: 1366, clientHeight: 900 },
  cssContentSize: { x: 0, y: 0, width: 1366, height: 4000 },
};

type Handler = (params: Record<string, unknown>) => Promise<unknown>;

function fakeTab(handlers: Record<string, Handler>): { tab: Pick<Page, "createCDPSession">; calls: string[]; detached: () => boolean } {
  const calls: string[] = [];
  let detached = false;
  const session = {
    send: (method: string, params: Record<string, unknown> = {}) => {
      calls.push(method);
      const handler = handlers[method];
      return handler ? handler(params) : Promise.reject(new Error(`unexpected ${method}`));
    },
    detach: async () => void (detached = true),
  };
  const createCDPSession = async () => (calls.push("createCDPSession"), session as unknown as CDPSession);
  return { tab: { createCDPSession }, calls, detached: () => detached };
}

const png = Buffer.from("png-bytes").toString("base64");
const jpeg = Buffer.from("jpeg-bytes").toString("base64");

afterEach(() => vi.restoreAllMocks());

describe("page text", () => {
  it("keeps every trimmed text node but those of script, style, header, footer, noscript and title, across frames", () => {
    expect(textOfSnapshot(SNAPSHOT)).toBe("Title text\nPara\nInner");
  });
});

describe("takePageExtracts", () => {
  it("takes text and each screenshot kind asked for, in order, then drops its session", async () => {
    const fake = fakeTab({
      "DOMSnapshot.captureSnapshot": async () => SNAPSHOT,
      "Page.getLayoutMetrics": async () => METRICS,
      "Page.captureScreenshot": async (p) => ({ data: p["format"] === "jpeg" ? jpeg : png }),
    });
    const extracts = await takePageExtracts(fake.tab, { text: true, screenshots: ["fullPage", "view", "thumbnail"] }, "http://x/");
    expect(extracts.text).toBe("Title text\nPara\nInner");
    expect(extracts.screenshots.map((s) => [s.kind, s.contentType, s.bytes.toString()])).toEqual([
      ["view", "image/png", "png-bytes"],
      ["thumbnail", "image/jpeg", "jpeg-bytes"],
      ["fullPage", "image/png", "png-bytes"],
    ]);
    expect(fake.detached()).toBe(true);
  });

  it("asks for a 640 px 16:9 thumbnail and a full page as tall as the content", async () => {
    const shots: Record<string, unknown>[] = [];
    const fake = fakeTab({
      "Page.getLayoutMetrics": async () => METRICS,
      "Page.captureScreenshot": async (p) => (shots.push(p), { data: png }),
    });
    await takePageExtracts(fake.tab, { text: false, screenshots: ["thumbnail", "fullPage"] }, "http://x/");
    expect(shots[0]).toMatchObject({ format: "jpeg", clip: { x: 0, y: 0, width: 1366, height: 768, scale: 640 / 1366 } });
    expect(shots[1]).toMatchObject({ format: "png", captureBeyondViewport: true, clip: { x: 0, y: 0, width: 1366, height: 4000, scale: 1 } });
  });

  it("makes a failed or hung screenshot and failed text a warning, and keeps the rest", async () => {
    const warnings: unknown[][] = [];
    // This page's warnings only: the worker may still be finishing another file's work.
    vi.spyOn(logger, "warn").mockImplementation((...args: unknown[]) => {
      if ((args[2] as Record<string, unknown> | undefined)?.["url"] === "http://x/") warnings.push(args);
    });
    const fake = fakeTab({
      "DOMSnapshot.captureSnapshot": async () => Promise.reject(new Error("snapshot failed")),
      "Page.getLayoutMetrics": async () => METRICS,
      "Page.captureScreenshot": async (p) => {
        if (p["format"] === "jpeg") return new Promise(() => undefined); // never answers
        if (!p["clip"]) throw new Error("capture failed");
        return { data: png };
      },
    });
    const started = Date.now();
    const extracts = await takePageExtracts(fake.tab, { text: true, screenshots: ["view", "thumbnail", "fullPage"] }, "http://x/", { textMs: 1000, screenshotMs: 300 });
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(extracts.text).toBeNull();
    expect(extracts.screenshots.map((s) => s.kind)).toEqual(["fullPage"]);
    expect(warnings.map((w) => [w[1], (w[2] as Record<string, unknown>)["screenshot"] ?? null])).toEqual([
      ["page text not extracted", null],
      ["screenshot not taken", "view"],
      ["screenshot not taken", "thumbnail"],
    ]);
    expect(fake.detached()).toBe(true);
  });

  it("does nothing (not even open a session) when nothing is asked for", async () => {
    const fake = fakeTab({});
    expect(await takePageExtracts(fake.tab, { text: false, screenshots: [] }, "http://x/")).toEqual({ text: null, screenshots: [] });
    expect(fake.calls).toEqual([]);
  });
});
