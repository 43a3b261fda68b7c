import { EventEmitter } from "node:events";
import type { CDPSession, Protocol } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { networkIdOf } from "../../../src/capture/browserInternal.js";
import { DocumentLifetimes } from "../../../src/capture/documentLifetimes.js";
import { LoadOutcomes } from "../../../src/capture/loadOutcomes.js";
import { PageAttempt, sentRequestsArrived } from "../../../src/capture/pageAttempt.js";

/** A paused response as Chromium hands one over; `networkId` undefined for a fetch the browser makes for itself. */
function pausedResponse(url: string, networkId: string | undefined): Protocol.Fetch.RequestPausedEvent {
  return {
    requestId: "interception-job-1.0",
    ...(networkId ? { networkId } : {}),
    request: { url, method: "GET", headers: {}, initialPriority: "Low", referrerPolicy: "no-referrer" },
    frameId: "frame",
    resourceType: "Other",
    responseStatusCode: 200,
    responseHeaders: [],
  };
}

/** Resolves with what `work` gave, or "still waiting" once `ms` passed. */
async function within<T>(work: Promise<T>, ms: number): Promise<T | "still waiting"> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"still waiting">((resolve) => (timer = setTimeout(() => resolve("still waiting"), ms)));
  const result = await Promise.race([work, late]);
  clearTimeout(timer);
  return result;
}

/** Load outcomes hearing a tab's CDP events (and its documents' comings and goings), and a way to send them. */
function listeningLoads() {
  const cdp = new EventEmitter() as unknown as CDPSession;
  const lifetimes = new DocumentLifetimes();
  lifetimes.listen(cdp);
  const loads = new LoadOutcomes(lifetimes);
  loads.listen(cdp);
  return { loads, emit: (event: string, params: unknown) => (cdp as unknown as EventEmitter).emit(event, params) };
}

describe("a fetch the browser makes for itself (no network id: an OpenSearch description)", () => {
  const { loads, emit } = listeningLoads();

  it("has no network id; a request of the page's loaders keeps its own", () => {
    expect(networkIdOf(pausedResponse("http://127.0.0.1:1/search.xml", undefined))).toBeNull();
    expect(networkIdOf(pausedResponse("http://127.0.0.1:1/app.js", "1.2"))).toBe("1.2");
  });

  it("waits for no end of its load, which the Network domain never reports", async () => {
    expect(await within(loads.of(null), 100)).toBeNull();
  });

  it("waits for no protocol report, and takes its origin's", async () => {
    emit("Network.responseReceived", { requestId: "1.1", response: { url: "http://127.0.0.1:1/", protocol: "http/1.1" } });
    const own = pausedResponse("http://127.0.0.1:1/search.xml", undefined);
    expect(await within(loads.protocols.of(own, false), 100)).toEqual({ httpVersion: "HTTP/1.1", protocols: ["http/1.1"] });
  });

  it("while a request of the page's loaders still waits for its load's end, as reported", async () => {
    const outcome = loads.of("1.3");
    expect(await within(outcome, 50)).toBe("still waiting");
    emit("Network.loadingFailed", { requestId: "1.3", errorText: "net::ERR_CONNECTION_RESET" });
    expect(await within(outcome, 100)).toBe("net::ERR_CONNECTION_RESET");
  });
});

describe("a load of a frame taken down (an ad slot removed): Chromium reports neither its end nor its failure", () => {
  const { loads, emit } = listeningLoads();

  it("ends when its frame is removed, not when the frame is swapped for another process's; other frames' loads still wait", async () => {
    const ad = loads.of("7.1", "ad-frame");
    const page = loads.of("7.2", "main-frame");
    emit("Page.frameDetached", { frameId: "ad-frame", reason: "swap" });
    expect(await within(ad, 50)).toBe("still waiting");
    emit("Page.frameDetached", { frameId: "ad-frame", reason: "remove" });
    expect(await within(ad, 50)).toBeNull();
    expect(await within(page, 50)).toBe("still waiting");
    emit("Network.loadingFailed", { requestId: "7.2", errorText: "net::ERR_CONNECTION_RESET" });
    expect(await within(page, 50)).toBe("net::ERR_CONNECTION_RESET");
  });
});

describe("a request of a frame taken down before it left the browser", () => {
  it("is no longer waited for at the page's end; the other frames' requests still are", async () => {
    const attempt = new PageAttempt(true);
    attempt.stillInBrowser.set("9.1", { frameId: "ad-frame", url: "http://127.0.0.1:1/ad.js" });
    attempt.stillInBrowser.set("9.2", { frameId: "main-frame", url: "http://127.0.0.1:1/app.js" });
    attempt.documentsGone((_, frameId) => frameId === "ad-frame");
    expect([...attempt.stillInBrowser.keys()]).toEqual(["9.2"]);
    attempt.ended = true;
    const started = Date.now();
    setTimeout(() => attempt.left("9.2"), 100);
    await sentRequestsArrived(attempt);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
