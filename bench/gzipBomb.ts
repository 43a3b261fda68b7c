/**
 * Gzip bomb benchmark: a page whose script is ~300 KB of gzip decoding to 300 MiB (as in
 * test/hostileBodies.e2e.test.ts), crawled with one worker. Prints one JSON line per run: the crawl's
 * seconds, the bomb page's seconds in its worker and its phases ("page timings"), the stored record's
 * payload length and whether its WARC-Payload-Digest matches it, and the floor to compare with: gunzip of the same body in this process.
 *   node dist/bench/gzipBomb.js [--runs 1] [--mib 300] [--cpuProf]
 * --cpuProf: the crawler runs under node --cpu-prof; its top self time is printed with the run.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { createReadStream, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gunzipSync, gzipSync } from "node:zlib";
import { WARCParser } from "warcio";
import { PAGE_TIMINGS_MESSAGE } from "../src/page/pageTimings.js";
import { topSelfTime } from "./lib/cpuProfile.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "1" }, mib: { type: "string", default: "300" }, cpuProf: { type: "boolean", default: false } } });
const decodedSize = Number(values.mib) * 1024 * 1024;
const crawlEntry = fileURLToPath(new URL("../src/cli/crawl.js", import.meta.url));

// A comment of spaces: what the test's fixture serves (level 9: about a thousandth of the decoded size).
const head = Buffer.from("/* a comment */ document.title = 'bomb';\n//");
const bomb = gzipSync(Buffer.concat([head, Buffer.alloc(decodedSize - head.length, 0x20)]), { level: 9 });
const page = (title: string, body: string) => `<!doctype html><html><head><title>${title}</title></head><body>${body}</body></html>`;
const server = createServer((req, res) => {
  if (req.url === "/bomb.html") res.writeHead(200, { "content-type": "text/html" }).end(page("bomb", `<script src="/bomb.js"></script><a href="/after.html">after</a>`));
  else if (req.url === "/bomb.js") res.writeHead(200, { "content-type": "application/javascript", "content-encoding": "gzip", "content-length": String(bomb.length) }).end(bomb);
  else if (req.url === "/after.html") res.writeHead(200, { "content-type": "text/html" }).end(page("after", ""));
  else res.writeHead(404).end();
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const gunzipStart = process.hrtime.bigint();
gunzipSync(bomb);
const gunzipSeconds = Number(process.hrtime.bigint() - gunzipStart) / 1e9;

async function run(): Promise<Record<string, unknown>> {
  const cwd = mkdtempSync(join(tmpdir(), "bench-bomb-"));
  const profileDir = join(cwd, "profile");
  const started = process.hrtime.bigint();
  const child = spawn(process.execPath, [...(values.cpuProf ? ["--cpu-prof", "--cpu-prof-dir", profileDir] : []), crawlEntry,
    "--url", `${url}/bomb.html`, "--collection", "bench", "--cwd", cwd, "--workers", "1", "--behaviors", "", "--scopeType", "prefix",
    "--logLevel", "debug", "--context", "page"], { stdio: ["ignore", "ignore", "ignore"], env: { ...process.env, TMPDIR: cwd } });
  const exit = await new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const logs = join(cwd, "collections", "bench", "logs");
  let bombPage: unknown = null;
  for (const file of readdirSync(logs)) {
    for (const line of readFileSync(join(logs, file), "utf8").split("\n")) {
      if (!line.includes(PAGE_TIMINGS_MESSAGE)) continue;
      const entry = JSON.parse(line) as { message: string; details: { url: string; ms: Record<string, number> } };
      if (entry.message === PAGE_TIMINGS_MESSAGE && entry.details.url.endsWith("/bomb.html")) bombPage = entry.details.ms;
    }
  }
  let payloadLength: number | null = null;
  let payloadDigestOk = false;
  const archive = join(cwd, "collections", "bench", "archive");
  for (const warc of readdirSync(archive)) {
    for await (const record of new WARCParser(createReadStream(join(archive, warc)))) {
      if (record.warcType !== "response" || !record.warcTargetURI?.endsWith("/bomb.js")) continue;
      payloadLength = 0;
      const payload = createHash("sha256");
      for await (const chunk of record.reader) {
        payload.update(chunk);
        payloadLength += chunk.length;
      }
      payloadDigestOk = record.warcPayloadDigest === "sha256:" + payload.digest("hex");
    }
  }
  const profile = values.cpuProf ? { cpuProfile: topSelfTime(profileDir, 15) } : {};
  rmSync(cwd, { recursive: true, force: true });
  return { exit, seconds: Math.round(seconds * 100) / 100, bombPageMs: bombPage, payloadLength, payloadDigestOk, expectedLength: decodedSize, gunzipSeconds: Math.round(gunzipSeconds * 100) / 100, ...profile };
}

for (let i = 0; i < Number(values.runs); i++) console.log(JSON.stringify(await run()));
server.close();
