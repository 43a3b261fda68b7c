import { EventEmitter } from "node:events";
import type { CDPSession } from "puppeteer-core";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { wholeByDeclaredLength } from "../../../src/archive/exchange.js";
import { DocumentLifetimes } from "../../../src/capture/documentLifetimes.js";
import { AFTER_BODY_RECEIVED_WAIT_MS, AFTER_WHOLE_BODY_RECEIVED_WAIT_MS, LoadOutcomes } from "../../../src/capture/loadOutcomes.js";

/** Load outcomes hearing a tab's CDP events, and a way to send them. */
function listeningLoads() {
  const cdp = new EventEmitter() as unknown as CDPSession;
  const lifetimes = new DocumentLifetimes();
  lifetimes.listen(cdp);
  const loads = new LoadOutcomes(lifetimes);
  loads.listen(cdp);
  return { loads, emit: (event: string, params: unknown) => (cdp as unknown as EventEmitter).emit(event, params) };
}

/** Where a promise stands once the timers ran `ms` on. */
async function after<T>(work: Promise<T>, ms: number): Promise<{ settled: false } | { settled: true; value: T }> {
  let state: { settled: false } | { settled: true; value: T } = { settled: false };
  void work.then((value) => (state = { settled: true, value }));
  await vi.advanceTimersByTimeAsync(ms);
  return state;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("a continued response whose body the capture read", () => {
  it("whole by its declared length: waited for only until the page received it, and a moment for its script (a page holding it unread tells no end)", async () => {
    const { loads, emit } = listeningLoads();
    const outcome = loads.of("3.1", "frame", { size: 69, whole: true });
    expect(await after(outcome, AFTER_BODY_RECEIVED_WAIT_MS * 3)).toEqual({ settled: false }); // the page is still getting it
    emit("Network.dataReceived", { requestId: "3.1", dataLength: 69, encodedDataLength: 69 });
    expect(await after(outcome, AFTER_WHOLE_BODY_RECEIVED_WAIT_MS - 10)).toEqual({ settled: false });
    expect(await after(outcome, 10)).toEqual({ settled: true, value: null });
  });

  it("whole, and received before anyone asked (a body the capture handed on itself): the bytes already received count", async () => {
    const { loads, emit } = listeningLoads();
    emit("Network.dataReceived", { requestId: "3.6", dataLength: 9_000, encodedDataLength: 9_000 });
    emit("Network.dataReceived", { requestId: "3.6", dataLength: 1_000, encodedDataLength: 1_000 });
    const outcome = loads.of("3.6", "frame", { size: 10_000, whole: true });
    expect(await after(outcome, AFTER_WHOLE_BODY_RECEIVED_WAIT_MS)).toEqual({ settled: true, value: null });
  });

  it("whole, and its load finished: at once", async () => {
    const { loads, emit } = listeningLoads();
    const outcome = loads.of("3.7", "frame", { size: 10_000, whole: true });
    emit("Network.loadingFinished", { requestId: "3.7", encodedDataLength: 10_000 });
    expect(await after(outcome, 0)).toEqual({ settled: true, value: null });
  });

  it("once the page received all of it, and no end is told: finished, after a short wait", async () => {
    const { loads, emit } = listeningLoads();
    const outcome = loads.of("3.2", "frame", { size: 300, whole: false });
    emit("Network.dataReceived", { requestId: "3.2", dataLength: 200, encodedDataLength: 80 });
    emit("Network.dataReceived", { requestId: "3.9", dataLength: 100, encodedDataLength: 40 }); // another request's bytes
    expect(await after(outcome, AFTER_BODY_RECEIVED_WAIT_MS * 3)).toEqual({ settled: false });
    emit("Network.dataReceived", { requestId: "3.2", dataLength: 100, encodedDataLength: 40 });
    expect(await after(outcome, AFTER_BODY_RECEIVED_WAIT_MS - 10)).toEqual({ settled: false });
    expect(await after(outcome, 10)).toEqual({ settled: true, value: null });
  });

  it("once the page received all of it, a failure told right after: the failure (a body cut off mid-transfer)", async () => {
    const { loads, emit } = listeningLoads();
    const outcome = loads.of("3.3", "frame", { size: 500, whole: false });
    emit("Network.dataReceived", { requestId: "3.3", dataLength: 500, encodedDataLength: 120 });
    emit("Network.loadingFailed", { requestId: "3.3", errorText: "net::ERR_INCOMPLETE_CHUNKED_ENCODING" });
    expect(await after(outcome, 0)).toEqual({ settled: true, value: "net::ERR_INCOMPLETE_CHUNKED_ENCODING" });
  });

  it("empty: finished after the short wait, unless a failure is told in it", async () => {
    const { loads, emit } = listeningLoads();
    const quiet = loads.of("3.4", "frame", { size: 0, whole: false });
    const failing = loads.of("3.5", "frame", { size: 0, whole: false });
    emit("Network.loadingFailed", { requestId: "3.5", errorText: "net::ERR_CONNECTION_RESET" });
    expect(await after(failing, 0)).toEqual({ settled: true, value: "net::ERR_CONNECTION_RESET" });
    expect(await after(quiet, AFTER_BODY_RECEIVED_WAIT_MS)).toEqual({ settled: true, value: null });
  });
});

describe("wholeByDeclaredLength", () => {
  it("only a body with every declared byte, the length counting the bytes held", () => {
    expect(wholeByDeclaredLength([["Content-Length", "69"]], 69, true)).toBe(true);
    expect(wholeByDeclaredLength([["Content-Length", "69"]], 68, true)).toBe(false);
    expect(wholeByDeclaredLength([], 69, true)).toBe(false);
    expect(wholeByDeclaredLength([["Content-Length", "x"]], 69, true)).toBe(false);
    // A decoded body is not what a content-encoding's length counts; the encoded one is.
    expect(wholeByDeclaredLength([["Content-Length", "40"], ["Content-Encoding", "gzip"]], 69, true)).toBe(false);
    expect(wholeByDeclaredLength([["Content-Length", "40"], ["Content-Encoding", "gzip"]], 40, false)).toBe(true);
  });
});
