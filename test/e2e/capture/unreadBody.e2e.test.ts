import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { httpHeader, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// A page fetch()es chunked answers (no Content-Length: the capture copies them as they stream) and never reads
// their bodies, as a poll or a beacon whose answer nobody looks at. The server sends each whole, ended by its
// terminating chunk: each is complete, and must be stored so, not as a stream cut at the page's end. One is
// `Cache-Control: no-store`, as polls often are: Chromium holds back the end of such a body until the page reads it.
const PATHS = ["/chunked", "/chunked-no-store"];
const CHUNKS = ["first chunk\n", "second chunk\n", "last chunk\n"];

let server: Server;
let url: string;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/unread.html") {
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><title>unread</title><script>fetch("/chunked"); fetch("/chunked-no-store");</script>`);
    } else if (req.url && PATHS.includes(req.url)) {
      // No Content-Length: Node sends it chunked; the chunks come apart in time, the last one ends it.
      res.writeHead(200, { "content-type": "text/plain", ...(req.url.endsWith("no-store") ? { "cache-control": "no-store" } : {}) });
      CHUNKS.forEach((chunk, i) => setTimeout(() => (i === CHUNKS.length - 1 ? res.end(chunk) : res.write(chunk)), i * 100));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-unread-"));
  crawl = await runCli("crawl", ["--url", `${url}/unread.html`, ...NO_BEHAVIORS, "--scopeType", "page", "--collection", "unread", "--cwd", cwd, "--redisDedupeUrl", redis.url]);
  const archive = join(cwd, "collections", "unread", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 120_000);

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("a chunked fetch answer the page never reads", () => {
  for (const path of PATHS) {
    it(`is stored whole, byte for byte, without WARC-Truncated (${path})`, () => {
      expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
      const [record, ...more] = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === url + path);
      expect(more).toEqual([]);
      expect(record.payload.toString("utf8")).toBe(CHUNKS.join(""));
      expect(record.headers.get("warc-truncated")).toBeUndefined();
    });
  }

  it("keeps the answer's headers as sent: Cache-Control: no-store", () => {
    const [record] = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === `${url}/chunked-no-store`);
    expect(httpHeader(record, "cache-control")).toBe("no-store");
  });
});
