// A page that was quiet when it ended is replaced in place by the tab's next page: its scripts run again (the next
// page needs them) until that page's document commits. Whatever the ended document asks for in that moment belongs to
// no page and must not reach the server. A next page at another fragment of the same document is loaded afresh, and
// what its script fetches then is its own.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

/**
 * A page that asks the server nothing for 5 s, then every 300 ms: it is done long before (--postLoadDelay 1, so quiet
 * at its end and replaced in place), and its requests come while the next page's document is still on its way.
 */
const CLOCK_PAGE = `<!doctype html><html><head><title>clock</title><link rel="icon" href="data:,"></head><body><p>clock</p><script>
const started = Date.now();
setInterval(() => Date.now() - started > 5000 && fetch("/beat"), 300);
</script></body></html>`;
/** Its document answers late: the ended page shows (and ticks) until then. */
const SLOW_PAGE = `<!doctype html><html><head><title>slow</title><link rel="icon" href="data:,"></head><body><p>slow</p></body></html>`;
/** A page that fetches its fragment's data, on load and when the fragment changes. */
const FRAGMENT_PAGE = `<!doctype html><html><head><title>fragments</title><link rel="icon" href="data:,"></head><body><p>fragments</p><script>
const load = () => location.hash && fetch("/part?" + location.hash.slice(1));
load();
addEventListener("hashchange", load);
</script></body></html>`;

interface Arrival {
  path: string;
  at: number;
}
let server: Server;
let url: string;
let cwd: string;
let crawl: CliResult;
let records: RawRecord[];
const arrivals: Arrival[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? "/";
    arrivals.push({ path, at: Date.now() });
    const html = (body: string) => res.writeHead(200, { "content-type": "text/html", "cache-control": "no-store" }).end(body);
    if (path === "/clock") html(CLOCK_PAGE);
    else if (path === "/slow") setTimeout(() => html(SLOW_PAGE), 6500);
    else if (path === "/fragments") html(FRAGMENT_PAGE);
    else if (path.startsWith("/beat") || path.startsWith("/part")) res.writeHead(200, { "content-type": "text/plain", "cache-control": "no-store" }).end(path);
    else res.writeHead(404, { "content-length": "0" }).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  cwd = mkdtempSync(join(tmpdir(), "crawl-ended-page-"));
  crawl = await runCli("crawl", [
    "--url", `${url}/clock`, "--url", `${url}/slow`, "--url", `${url}/fragments`, "--url", `${url}/fragments#two`,
    "--scopeType", "page", "--allowHashUrls", "--workers", "1", "--postLoadDelay", "1", "--collection", "ended", "--cwd", cwd, "--logLevel", "debug",
  ], { timeoutMs: 120_000 });
  const archive = join(cwd, "collections", "ended", "archive");
  records = readdirSync(archive).flatMap((f) => readWarcRecords(join(archive, f)));
}, 150_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(cwd, { recursive: true, force: true });
});

const crawledAt = (page: string) => {
  const line = logLines(crawl.stderr).find((l) => l.message === "page crawled" && l.details?.url === url + page);
  expect(line, page).toBeDefined();
  return Date.parse(String(line!.timestamp));
};

describe("a page replaced in place by the tab's next page", () => {
  it("crawls every page", () => {
    expect(crawl.code, crawl.stderr.slice(-3000)).toBe(0);
    for (const page of ["/clock", "/slow", "/fragments", "/fragments#two"]) crawledAt(page);
  });

  it("sends nothing of the ended page once it is crawled: its late tick is refused, not sent", () => {
    const ended = crawledAt("/clock");
    const late = arrivals.filter((a) => a.path.startsWith("/beat") && a.at > ended).map((a) => `${a.path} (+${a.at - ended} ms)`);
    expect(late).toEqual([]);
    // The ended page did ask (its scripts ran again before the slow page replaced it): the case is not vacuous.
    const refused = logLines(crawl.stderr).filter((l) => l.message === "request of an ended page's document refused");
    expect(refused.map((l) => new URL(String(l.details?.url)).pathname)).toContain("/beat");
    // Neither page holds it.
    expect(records.map((r) => r.headers.get("warc-target-uri") ?? "").filter((u) => u.includes("/beat"))).toEqual([]);
  });

  it("stores what a next page at another fragment of the same document fetches", () => {
    const parts = records.filter((r) => r.headers.get("warc-type") === "response").map((r) => r.headers.get("warc-target-uri") ?? "").filter((u) => u.startsWith(`${url}/part`));
    expect(parts).toEqual([`${url}/part?two`]);
    expect(arrivals.filter((a) => a.path === "/part?two")).toHaveLength(1);
  });
});
