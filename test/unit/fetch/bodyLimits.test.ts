import { readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyReading } from "../../../src/capture/bodies/responseBody.js";
import { StopControl } from "../../../src/crawl/stopControl.js";
import { StorageWatch } from "../../../src/crawl/storageWatch.js";
import { BodySpool, defaultBodyLimits } from "../../../src/fetch/bodyLimits.js";
import { directFetch } from "../../../src/fetch/directFetch.js";
import type { ExchangeBody } from "../../../src/archive/exchange.js";
import { resolveCrawlOptions } from "../../../src/config/crawlOptions.js";
import { rulesOutsideACrawl } from "../../../src/fetch/connectionRules.js";

const LOCAL_RULES = rulesOutsideACrawl();

const bytesOf = (body: ExchangeBody) => (body.kind === "bytes" ? Buffer.from(body.bytes) : readFileSync(body.path));

/**
 * How `actual` differs from `expected`, null when it does not. Megabytes are compared by Buffer.equals:
 * toEqual walks a buffer a byte at a time through vitest's generic equality, about a minute for 5 MB.
 */
function bytesDiffer(actual: Buffer, expected: Buffer): string | null {
  if (actual.equals(expected)) return null;
  return `${actual.length} bytes (expected ${expected.length}), first difference at ${actual.findIndex((byte, i) => byte !== expected[i])}`;
}

describe("how a paused response's body is read", () => {
  it.each([
    [[["content-length", "5000"]], "Script", "read"],
    [[["content-length", "9000000"]], "Image", "stream"],
    // A compressed body over 100 KB may decode to a thousand times that (a gzip bomb).
    [[["content-length", "300000"], ["content-encoding", "gzip"]], "Script", "stream"],
    [[["content-length", "90000"], ["content-encoding", "gzip"]], "Script", "read"],
    [[["content-type", "text/event-stream"]], "Other", "live"],
    [[["content-type", "text/plain"]], "Fetch", "live"],
    [[["content-type", "application/json"], ["content-encoding", "gzip"]], "XHR", "live"],
    [[["content-type", "video/mp4"]], "Media", "stream"],
    [[["content-type", "text/html"], ["content-encoding", "gzip"]], "Document", "read"],
    [[["content-type", "text/javascript"], ["content-encoding", "br"]], "Script", "stream"],
    [[["content-type", "text/html"]], "Document", "read"],
  ] as [[string, string][], string, string][])("%j (%s) -> %s", (headers, type, expected) => {
    expect(bodyReading(headers, type, "http://127.0.0.1:1/x")).toBe(expected);
  });

  it.each([
    // A player fetches its manifests; sent chunked (no length), they are still read whole, to be served and followed.
    [[["content-type", "application/vnd.apple.mpegurl"]], "XHR", "http://127.0.0.1:1/live/index", "read"],
    [[["content-type", "application/dash+xml; charset=utf-8"], ["content-encoding", "gzip"]], "Fetch", "http://127.0.0.1:1/a", "read"],
    [[["content-type", "text/plain"]], "Fetch", "http://127.0.0.1:1/video/master.m3u8?token=1", "read"],
    [[["content-type", "application/octet-stream"]], "XHR", "http://127.0.0.1:1/stream.mpd", "read"],
    [[["content-type", "text/plain"]], "Fetch", "http://127.0.0.1:1/video/segment.ts", "live"],
  ] as [[string, string][], string, string, string][])("a manifest %j (%s %s) -> %s", (headers, type, url, expected) => {
    expect(bodyReading(headers, type, url)).toBe(expected);
  });
});

describe("BodySpool", () => {
  it("keeps exactly --maxResourceSize bytes across chunks, in a temp file past 4 MB, and says it cut", async () => {
    const spool = new BodySpool(defaultBodyLimits(5_000_000));
    const chunk = Buffer.alloc(1_000_000, 7);
    let accepted = 0;
    for (let i = 0; i < 8 && (await spool.add(chunk)); i++) accepted++;
    expect(accepted).toBe(5);
    expect(spool.overLimit).toBe(true);
    const body = await spool.finish();
    expect(body.kind).toBe("file");
    expect(bytesDiffer(bytesOf(body), Buffer.alloc(5_000_000, 7))).toBeNull();
    if (body.kind === "file") rmSync(body.path);
  });

  it("a body exactly at the cap is whole", async () => {
    const spool = new BodySpool(defaultBodyLimits(10));
    expect(await spool.add(Buffer.from("0123456789"))).toBe(true);
    expect(spool.overLimit).toBe(false);
    expect(bytesOf(await spool.finish()).toString()).toBe("0123456789");
  });
});

describe("StorageWatch (--sizeLimit while writing)", () => {
  it("counts bodies being received against --sizeLimit, refuses past it and stops the crawl gracefully", () => {
    const stop = new StopControl();
    const watch = new StorageWatch({ maxResourceSize: 1e9, sizeLimit: 1000, diskUtilization: 0, dir: "/", bytesWritten: () => 400 }, stop);
    expect(watch.storageAllows(500)).toBe(true);
    expect(stop.requested).toBe(false);
    // 400 written + 500 pending + 200 > 1000.
    expect(watch.storageAllows(200)).toBe(false);
    expect(stop.reason).toBe("size-limit");
    expect(stop.immediate).toBe(false);
    stop.dispose();
  });

  it("a disk already above --diskUtilization stops the crawl at once", () => {
    const stop = new StopControl();
    const watch = new StorageWatch({ maxResourceSize: 1e9, sizeLimit: 0, diskUtilization: 1, dir: "/", bytesWritten: () => 0 }, stop);
    watch.start();
    watch.dispose();
    expect(stop.reason).toBe("disk-utilization");
    stop.dispose();
  });
});

describe("directFetch: a total deadline and the size cap", () => {
  let server: Server;
  let origin: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/drip") {
        // One byte every 100 ms, forever: an idle timeout never fires.
        res.writeHead(200, { "content-type": "text/plain" });
        const timer = setInterval(() => res.write("x"), 100);
        res.on("close", () => clearInterval(timer));
      } else if (req.url === "/silent") {
        // Never answers.
      } else {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        const chunk = Buffer.alloc(64 * 1024, 1);
        const pump = () => {
          while (res.write(chunk));
          res.once("drain", pump);
        };
        res.on("close", () => res.removeAllListeners("drain"));
        pump();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it("a body dripping forever is kept as received at the deadline, marked time", async () => {
    const started = Date.now();
    const exchange = await directFetch(`${origin}/drip`, { rules: LOCAL_RULES, timeoutMs: 1500 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(exchange.truncated).toBe("time");
    expect(bytesOf(exchange.body).toString()).toMatch(/^x+$/);
  });

  it("a server that never answers fails at the deadline", async () => {
    const started = Date.now();
    await expect(directFetch(`${origin}/silent`, { rules: LOCAL_RULES, timeoutMs: 1000 })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("an endless body is cut at the cap, marked length", async () => {
    const limits = defaultBodyLimits(3_000_000);
    const exchange = await directFetch(`${origin}/endless`, { rules: LOCAL_RULES, timeoutMs: 20_000, limits });
    expect(exchange.truncated).toBe("length");
    expect(bytesDiffer(bytesOf(exchange.body), Buffer.alloc(3_000_000, 1))).toBeNull();
    expect(limits.cutShort).toEqual({ length: 1, time: 0 });
  });
});

describe("--maxResourceSize and --diskUtilization", () => {
  const resolve = (flags: Record<string, string>) => resolveCrawlOptions({ url: ["http://a.test/"], ...flags });
  it("default to 512MB and browsertrix-crawler's 90%", () => {
    expect(resolve({})).toMatchObject({ maxResourceSize: 512_000_000, diskUtilization: 90 });
  });
  it("take sizes and percents; 0 turns the disk check off", () => {
    expect(resolve({ maxResourceSize: "5MB", diskUtilization: "0" })).toMatchObject({ maxResourceSize: 5_000_000, diskUtilization: 0 });
  });
  it("refuse bad values with one clear line", () => {
    expect(() => resolve({ maxResourceSize: "lots" })).toThrow(/^--maxResourceSize must be a size like/);
    expect(() => resolve({ maxResourceSize: "0" })).toThrow("--maxResourceSize must be at least 1 byte");
    expect(() => resolve({ diskUtilization: "101" })).toThrow("--diskUtilization is a percent (0-100; 0 = off), got 101");
    expect(() => resolve({ diskUtilization: "ninety" })).toThrow(/^--diskUtilization must be a whole number/);
  });
});
