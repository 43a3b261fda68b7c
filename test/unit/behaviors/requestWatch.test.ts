import { EventEmitter } from "node:events";
import type { HTTPRequest, Page, Protocol } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { RequestWatch } from "../../../src/behaviors/requestWatch.js";
import { IN_PAGE_SCRIPT_NAMES } from "../../../src/util/requestInitiators.js";

/** A tab as the watch hears it: puppeteer's request events and its main frame. */
function fakeTab() {
  const main = { name: "main" };
  const tab = Object.assign(new EventEmitter(), { mainFrame: () => main });
  const request = (url: string, frame: object = main, navigation = false, made: { type?: string; initiator?: Protocol.Network.Initiator } = {}) =>
    ({ url: () => url, resourceType: () => made.type ?? "image", isNavigationRequest: () => navigation, frame: () => frame, initiator: () => made.initiator }) as unknown as HTTPRequest;
  return { tab, main, request, watch: RequestWatch.attach(tab as unknown as Page) };
}

describe("RequestWatch", () => {
  it("counts a request in flight until it ends", () => {
    const { tab, request, watch } = fakeTab();
    const image = request("http://127.0.0.1:1/a.png");
    tab.emit("request", image);
    expect(watch.quietFor(0)).toBe(false);
    tab.emit("requestfinished", image);
    expect(watch.quietFor(0)).toBe(true);
  });

  it("forgets what the previous document had in flight once the next one commits, not a subframe's navigation", () => {
    const { tab, main, request, watch } = fakeTab();
    tab.emit("request", request("http://127.0.0.1:1/beacon.gif"));
    tab.emit("framenavigated", { name: "ad" });
    expect(watch.quietFor(0)).toBe(false);
    tab.emit("framenavigated", main);
    expect(watch.quietFor(0)).toBe(true);
  });

  it("leaves out the behaviors' own fetches and the browser's icon and manifest, not the page's requests a behavior set off", () => {
    const { tab, request, watch } = fakeTab();
    const frame = (url: string, functionName = "f") => ({ url, functionName, scriptId: "1", lineNumber: 0, columnNumber: 0 });
    const byScript = (...urls: string[]): Protocol.Network.Initiator => ({ type: "script", stack: { callFrames: urls.map((url) => frame(url)) } });
    const { behaviors, pageWatch } = IN_PAGE_SCRIPT_NAMES;
    tab.emit("request", request("http://127.0.0.1:1/photo-2x.png", undefined, false, { type: "fetch", initiator: byScript(pageWatch, behaviors) }));
    tab.emit("request", request("http://127.0.0.1:1/favicon.ico", undefined, false, { type: "other", initiator: { type: "other" } }));
    tab.emit("request", request("http://127.0.0.1:1/manifest.json", undefined, false, { type: "manifest", initiator: { type: "other" } }));
    expect(watch.quietFor(0)).toBe(true);
    expect(watch.activeSince(0)).toBe(false);
    // A behavior's click ran the page's handler, which fetched: the page's own request.
    tab.emit("request", request("http://127.0.0.1:1/more.json", undefined, false, { type: "fetch", initiator: byScript(pageWatch, "http://127.0.0.1:1/app.js", behaviors) }));
    expect(watch.quietFor(0)).toBe(false);
  });
});
