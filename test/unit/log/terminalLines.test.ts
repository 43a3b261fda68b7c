import { describe, expect, it } from "vitest";
import { readableLine } from "../../../src/log/terminal.js";
import { crawlSummary, formatElapsed } from "../../../src/log/progress.js";

const entry = (logLevel: "info" | "warn" | "error", message: string, details: Record<string, unknown> = {}) => ({ timestamp: "", logLevel, context: "page", message, details });

describe("readable terminal lines", () => {
  it("name the level, the message, what it is about and the error, on one line", () => {
    expect(readableLine(entry("warn", "page failed, will retry", { url: "http://a.test/x", error: "net::ERR_FAILED at\n  http://a.test/x", depth: 1 })))
      .toBe("warn  page failed, will retry  http://a.test/x (net::ERR_FAILED at http://a.test/x)");
    expect(readableLine(entry("error", "disk full"))).toBe("error disk full");
    expect(readableLine(entry("info", "WACZ written", { path: "/c/x.wacz", size: 10 }))).toBe("info  WACZ written  /c/x.wacz");
    expect(readableLine(entry("info", "crawl started", { seeds: ["http://a/", "http://b/", "http://c/", "http://d/", "http://e/"] })))
      .toBe("info  crawl started  http://a/ http://b/ http://c/ and 2 more");
    expect(readableLine(entry("info", "crawl done", { crawled: 3 }), "3 pages")).toBe("info  crawl done  3 pages");
  });

  it("summaries and elapsed times read naturally", () => {
    expect(formatElapsed(7.9)).toBe("0:07");
    expect(formatElapsed(754)).toBe("12:34");
    expect(formatElapsed(3723)).toBe("1:02:03");
    expect(crawlSummary({ crawled: 12, failed: 1, bytesWritten: 1_234_567, elapsedSeconds: 42.3 })).toBe("12 pages, 1 failed, 1.2 MB in 0:42");
  });
});
