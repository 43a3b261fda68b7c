import { EventEmitter } from "node:events";
import type { HTTPRequest, Page } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { RequestWatch } from "../../../src/behaviors/requestWatch.js";

/** A tab as the watch hears it: puppeteer's request events and its main frame. */
function fakeTab() {
  const main = { name: "main" };
  const tab = Object.assign(new EventEmitter(), { mainFrame: () => main });
  const request = (url: string, frame: object = main, navigation = false) =>
    ({ url: () => url, resourceType: () => "image", isNavigationRequest: () => navigation, frame: () => frame }) as unknown as HTTPRequest;
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
});
