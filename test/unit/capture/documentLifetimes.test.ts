import { EventEmitter } from "node:events";
import type { CDPSession } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { DocumentLifetimes } from "../../../src/capture/documentLifetimes.js";
import { LoadOutcomes } from "../../../src/capture/loadOutcomes.js";
import { NetworkActivity } from "../../../src/capture/networkActivity.js";

/** A tab's CDP session as the capture hears it: events only. */
function tab() {
  const cdp = new EventEmitter() as unknown as CDPSession;
  const emit = (event: string, params: unknown) => (cdp as unknown as EventEmitter).emit(event, params);
  const lifetimes = new DocumentLifetimes();
  lifetimes.listen(cdp);
  const request = (requestId: string, frameId: string, loaderId: string, url = `http://127.0.0.1:1/${requestId}`, type = "Image") =>
    emit("Network.requestWillBeSent", { requestId, frameId, loaderId, type, request: { url } });
  const navigated = (frameId: string, loaderId: string, parentId?: string) => emit("Page.frameNavigated", { frame: { id: frameId, loaderId, ...(parentId ? { parentId } : {}) } });
  return { cdp, emit, lifetimes, request, navigated };
}

describe("DocumentLifetimes", () => {
  it("tells an ended page's requests (its frames' too) until the next page's document commits, waiting for whose a request is when the browser paused it first", async () => {
    const { emit, lifetimes, request, navigated } = tab();
    navigated("main", "L1");
    emit("Page.frameAttached", { frameId: "chat", parentFrameId: "main" });
    navigated("chat", "C1", "main");
    request("1.1", "main", "L1");
    expect(await lifetimes.madeByEndedDocument("1.1", 0)).toBe(false); // not ended yet
    lifetimes.endDocument();
    request("1.2", "main", "L1");
    request("1.3", "chat", "C1");
    request("2.0", "main", "L2", "http://127.0.0.1:1/next.html", "Document");
    expect(await lifetimes.madeByEndedDocument("1.2", 0)).toBe(true);
    expect(await lifetimes.madeByEndedDocument("1.3", 0)).toBe(true);
    expect(await lifetimes.madeByEndedDocument("2.0", 0)).toBe(false);
    // Paused before the browser told its loader: told 20 ms later, within the wait.
    const asked = lifetimes.madeByEndedDocument("1.4", 1000);
    setTimeout(() => request("1.4", "main", "L1"), 20);
    const started = Date.now();
    expect(await asked).toBe(true);
    expect(Date.now() - started).toBeLessThan(500);
    // Never told: not held past the wait, and not refused.
    expect(await lifetimes.madeByEndedDocument("1.5", 30)).toBe(false);
    // The next page's document commits: nothing is the ended page's any more (its own requests are gone, not refused here).
    navigated("main", "L2");
    request("2.1", "main", "L2");
    expect(await lifetimes.madeByEndedDocument("1.2", 0)).toBe(false);
    expect(await lifetimes.madeByEndedDocument("2.1", 0)).toBe(false);
    expect(await lifetimes.madeByEndedDocument("2.2", 1000)).toBe(false); // no wait once nothing ended shows
  });

  it("tells the previous page's requests gone once the next page's document commits, not before", () => {
    const { lifetimes, request, navigated } = tab();
    navigated("main", "L1");
    request("1.1", "main", "L1");
    request("2.0", "main", "L2", "http://127.0.0.1:1/next.html", "Document");
    expect(lifetimes.requestGone("1.1")).toBe(false);
    navigated("main", "L2");
    expect(lifetimes.requestGone("1.1")).toBe(true);
    expect(lifetimes.requestGone("2.0")).toBe(false);
    // A beacon of the page left, sent as it unloads: gone from the start.
    request("1.2", "main", "L1");
    expect(lifetimes.requestGone("1.2")).toBe(true);
    expect(lifetimes.documentGone("main", "L2")).toBe(false);
  });

  it("tells the requests of the previous page's frames gone with it (no frame is said to be detached)", () => {
    const { emit, lifetimes, request, navigated } = tab();
    navigated("main", "L1");
    emit("Page.frameAttached", { frameId: "video", parentFrameId: "main" });
    navigated("video", "V1", "main");
    request("6.1", "video", "V1", "https://www.youtube.com/youtubei/v1/log_event");
    navigated("main", "L2");
    expect(lifetimes.requestGone("6.1")).toBe(true);
    expect(lifetimes.requestGone("6.2", "video")).toBe(true);
    // The next page's own frames are not.
    emit("Page.frameAttached", { frameId: "video-2", parentFrameId: "main" });
    request("7.1", "video-2", "V2");
    expect(lifetimes.requestGone("7.1")).toBe(false);
  });

  it("tells a removed frame's requests gone, not a frame swapped into another process, nor a subframe's navigation", () => {
    const { emit, lifetimes, request, navigated } = tab();
    navigated("main", "L1");
    request("3.1", "ad", "A1");
    navigated("ad", "A2", "main");
    expect(lifetimes.requestGone("3.1")).toBe(false);
    emit("Page.frameDetached", { frameId: "ad", reason: "swap" });
    expect(lifetimes.requestGone("3.1")).toBe(false);
    emit("Page.frameDetached", { frameId: "ad", reason: "remove" });
    expect(lifetimes.requestGone("3.1")).toBe(true);
    // Paused before its requestWillBeSent was heard: judged by its frame.
    expect(lifetimes.requestGone("3.9", "ad")).toBe(true);
    expect(lifetimes.requestGone("3.9", "main")).toBe(false);
  });

  it("ends the network-idle count and the load outcome of a gone document's requests", async () => {
    const { cdp, lifetimes, request, navigated } = tab();
    const network = new NetworkActivity(cdp, lifetimes);
    const loads = new LoadOutcomes(lifetimes);
    loads.listen(cdp);
    navigated("main", "L1");
    request("4.1", "main", "L1");
    const outcome = loads.of("4.1", "main");
    network.reset();
    request("4.2", "main", "L1");
    expect(network.quietFor(0)).toBe(false);
    navigated("main", "L2");
    expect(network.quietFor(0)).toBe(true);
    await expect(outcome).resolves.toBeNull();
    request("4.3", "main", "L1"); // the page left, still sending
    expect(network.quietFor(0)).toBe(true);
    await expect(loads.of("4.3", "main")).resolves.toBeNull();
    request("5.1", "main", "L2");
    expect(network.quietFor(0)).toBe(false);
  });
});
