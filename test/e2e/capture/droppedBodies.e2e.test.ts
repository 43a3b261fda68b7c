import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

// A page drops two loads while their bodies arrive, as real pages do all the time: it aborts a fetch() (a
// typeahead, an ad refresh) and takes an ad frame down. Each answer's headers come at once and its body over
// 3 s, so the capture is reading each body when the page drops it. Chromium never answers a body read of a
// dropped request: the capture must give up the read at once (the body is then fetched outside the browser,
// as for any body the browser cannot give), not wait out the browser's two-minute protocol timeout.
const DROPPED = ["/slow/data.txt", "/slow/frame.html"];
const BODY_CHUNKS = 30;
/** Each answer's body: its own bytes, so that neither is stored as a revisit of the other. */
const bodyOf = (path: string) => path.slice(-1).repeat(1000 * BODY_CHUNKS);
const DROP_AFTER_MS = 1500;

let server: Server;
let url: string;
let redis: TestRedis;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
const requests: string[] = [];

interface LogLine {
  message: string;
  details?: Record<string, unknown>;
}
const logLines = () => crawl.stderr.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as LogLine);

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? "");
    if (req.url === "/dropping.html") {
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><title>dropping</title>
<iframe id="ad" src="/slow/frame.html"></iframe>
<script>
  const data = new AbortController();
  fetch("/slow/data.txt", { signal: data.signal }).then((r) => r.text()).catch(() => undefined);
  setTimeout(() => {
    data.abort();
    document.getElementById("ad").remove();
  }, ${DROP_AFTER_MS});
</script>`);
    } else if (req.url && DROPPED.includes(req.url)) {
      const type = req.url.endsWith(".html") ? "text/html" : "text/plain";
      const body = bodyOf(req.url);
      res.writeHead(200, { "content-type": type, "content-length": String(body.length) });
      let sent = 0;
      const tick = setInterval(() => {
        if (res.destroyed) return clearInterval(tick);
        res.write(body.slice(sent * 1000, (sent + 1) * 1000));
        if (++sent === BODY_CHUNKS) {
          clearInterval(tick);
          res.end();
        }
      }, 100);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-dropped-"));
  crawl = await runCli("crawl", ["--url", `${url}/dropping.html`, ...NO_BEHAVIORS, "--scopeType", "page", "--collection", "dropped", "--cwd", cwd,
    "--redisDedupeUrl", redis.url, "--logLevel", "debug", "--context", "capture,page"], { timeoutMs: 90_000 });
  const archive = join(cwd, "collections", "dropped", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 100_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

describe("loads the page drops while their bodies arrive (an aborted fetch, a removed frame)", () => {
  it("do not hold the page: the crawl ends, the page crawled on its first attempt", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    expect(logLines().filter((l) => l.message === "page crawled").map((l) => l.details?.url)).toEqual([`${url}/dropping.html`]);
    expect(crawl.stderr).not.toMatch(/timed out/);
  });

  it("give up their body read in the browser as soon as the page drops them", () => {
    const given = logLines().filter((l) => l.message === "response body unavailable in the browser; fetched directly");
    expect(given.map((l) => l.details?.url).sort()).toEqual(DROPPED.map((path) => url + path).sort());
    for (const line of given) expect(String(line.details?.error)).toMatch(/^the browser dropped the request while its body was read \(net::ERR_ABORTED\)$/);
  });

  it("are stored whole, once each, from the fetch outside the browser", () => {
    for (const path of DROPPED) {
      const stored = records.filter((r) => r.headers.get("warc-type") === "response" && r.headers.get("warc-target-uri") === url + path);
      expect(stored, path).toHaveLength(1);
      expect(stored[0].payload.toString("utf8"), path).toBe(bodyOf(path));
      expect(stored[0].headers.get("warc-truncated"), path).toBeUndefined();
    }
    expect(requests.filter((r) => r.startsWith("/slow/")).sort()).toEqual([...DROPPED, ...DROPPED].sort());
  });
});
