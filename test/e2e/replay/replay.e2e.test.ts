// `replay`: a deduplicated crawl opened with every WACZ it requires, found and checked, from folders, an http
// server and the S3 store the crawls uploaded to. Three crawls of one site, each revisiting the ones before.
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logLines, runCli, type CliResult } from "../../helpers/cli.js";
import { crawlDependentSet, DEPENDENT_COLLECTIONS, PAGES_OF, startDependentSite, waczPathOf, type DependentSite } from "../../helpers/dependentCrawls.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { detectReplayFailure, replayPage, type ReplayServer } from "../../helpers/replay.js";
import { searchReplayPages } from "../../helpers/replaySearch.js";
import { sha256 } from "../../helpers/warcFile.js";
import { folderResolver } from "../../../src/replay/replayServer.js";

const ROOT = join(import.meta.dirname, "../../..");
const BUCKET = "archive";
const S3_CREDENTIALS = { STORE_ACCESS_KEY: "S3RVER", STORE_SECRET_KEY: "S3RVER" };

let site: DependentSite;
let redis: TestRedis;
let cwd: string;
let s3rver: S3rver;
let s3Url: string;
let files: Server;
let filesUrl: string;
let crawls: CliResult[];
/** What the crawls' uploads told WEBHOOK_URL, in order. */
const told: Record<string, unknown>[] = [];

const hashOf = (path: string): string => sha256(readFileSync(path));
const sizeOf = (path: string): number => readFileSync(path).length;

/** A folder holding copies of the named collections' WACZ files only. */
function folderWith(names: string[]): string {
  const dir = mkdtempSync(join(cwd, "copy-"));
  for (const name of names) copyFileSync(waczPathOf(cwd, name), join(dir, `${name}.wacz`));
  return dir;
}

/** `replay` serving until stopped: its printed line, and the server as the replay harness reaches it. */
async function startReplay(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ server: ReplayServer; line: string; sourcePath: string; stop(): Promise<number | null> }> {
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, "dist/src/cli/replay.js"), ...args], { cwd: ROOT, env: { ...process.env, ...env } });
  let stdout = "";
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const line = await new Promise<string>((done, fail) => {
    child.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes("\n")) done(stdout.split("\n")[0]!);
    });
    child.once("exit", (code) => fail(new Error(`replay exited ${code} before serving: ${stderr}`)));
  });
  const app = new URL(/open (\S+)/.exec(line)![1]!);
  const manifest = new URL(app.searchParams.get("source")!);
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)));
  return {
    server: { url: app.origin, close: async () => {} },
    line,
    sourcePath: manifest.pathname,
    stop: async () => {
      child.kill("SIGTERM");
      return exited;
    },
  };
}

beforeAll(async () => {
  site = await startDependentSite();
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "replay-set-"));
  mkdirSync(join(cwd, "s3"));
  s3rver = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: join(cwd, "s3"), configureBuckets: [{ name: BUCKET }] });
  const { port } = await s3rver.run();
  s3Url = `http://127.0.0.1:${port}`;
  // Serves the WACZ files copied into `served` once the crawls are done, and takes the uploads' webhook calls.
  const served = mkdtempSync(join(cwd, "served-"));
  const resolver = folderResolver(served);
  files = createServer((req, res) => {
    if (req.method === "POST") {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        told.push(JSON.parse(body) as Record<string, unknown>);
        res.writeHead(200).end();
      });
      return;
    }
    const path = resolver(decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname.slice(1)));
    if (!path) return void res.writeHead(404).end();
    try {
      const body = readFileSync(path);
      res.writeHead(200, { "Content-Type": "application/wacz", "Content-Length": body.length }).end(req.method === "HEAD" ? undefined : body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((done) => files.listen(0, "127.0.0.1", done));
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}/`;
  // Every crawl uploads its WACZ as the store names it (<time>-<crawl id>.wacz), not as its dependents know it.
  // Screenshots and text kept in the WARC: what `qa` compares the replay with.
  crawls = await crawlDependentSet(site, cwd, redis.url, ["--screenshot", "view", "--text", "to-warc"], { ...S3_CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_PATH: "crawls/", WEBHOOK_URL: `${filesUrl}webhook` });
  for (const name of DEPENDENT_COLLECTIONS) copyFileSync(waczPathOf(cwd, name), join(served, `${name}.wacz`));
}, 240_000);

afterAll(async () => {
  await site?.close();
  await redis?.stop();
  await s3rver?.close();
  await new Promise((done) => files?.close(done));
  rmSync(cwd, { recursive: true, force: true });
});

describe("replay: a crawl with every WACZ it requires", () => {
  it("--list names the whole set, dependencies first, each with its hash, size and where it was found", async () => {
    const result = await runCli("replay", ["--list", waczPathOf(cwd, "three")]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual(
      DEPENDENT_COLLECTIONS.map((name) => `${name}.wacz ${hashOf(waczPathOf(cwd, name))} ${sizeOf(waczPathOf(cwd, name))} ${waczPathOf(cwd, name)}`),
    );
    // Crawl two requires crawl one only.
    const two = await runCli("replay", ["--list", join(cwd, "collections", "two")]);
    expect(two.stdout.trim().split("\n").map((l) => l.split(" ")[0])).toEqual(["one.wacz", "two.wacz"]);
    // Each crawl ends saying what it requires and the command that opens the set; the first requires nothing.
    const told = crawls.map((c) => logLines(c.stderr).filter((l) => l.message.startsWith("this crawl's WACZ files require other WACZ files")).map((l) => l.details));
    expect(told).toEqual([[], [{ requires: ["one.wacz"], replay: `replay ${join(cwd, "collections", "two")}` }], [{ requires: ["one.wacz", "two.wacz"], replay: `replay ${join(cwd, "collections", "three")}` }]]);
  });

  it("serves the set: each of crawl three's pages renders with every image, the revisited ones too", async () => {
    const replay = await startReplay([waczPathOf(cwd, "three")]);
    try {
      expect(replay.line).toMatch(/^replay: 3 WACZ files: open http:\/\/127\.0\.0\.1:\d+\/\?source=/);
      for (const path of PAGES_OF.three) {
        const page = await replayPage(replay.server, { source: replay.sourcePath, url: site.url + path, waitForImages: true, waitForText: path === "/" ? "version 3" : "crawl 3" });
        expect(detectReplayFailure(page.text), path).toBeNull();
        expect(page.images.length, path).toBe({ "/": 0, "/a.html": 2, "/b.html": 1, "/c.html": 2 }[path]);
        expect(page.images.filter((img) => img.naturalWidth !== 40), `${path}: ${JSON.stringify(page.images)}`).toEqual([]);
      }
      // The text search covers the pages of every crawl of the set, each once (ReplayWeb.page searches a WACZ's
      // extraPages.jsonl: its seeds are listed, not searched, as when one WACZ is opened).
      const crawled = await searchReplayPages(replay.server, { source: replay.sourcePath, query: "crawl" });
      expect(crawled.map((p) => p.title).sort()).toEqual(["Page A, crawl 1", "Page A, crawl 2", "Page A, crawl 3", "Page B, crawl 2", "Page B, crawl 3", "Page C, crawl 3"]);
      const pageB = await searchReplayPages(replay.server, { source: replay.sourcePath, query: "Page B" });
      expect(pageB.map((p) => [p.url, p.title]).sort()).toEqual([[`${site.url}/b.html`, "Page B, crawl 2"], [`${site.url}/b.html`, "Page B, crawl 3"]]);
      // The same page from crawl three's WACZ alone (served as the set's last member): its revisits resolve nowhere.
      const alone = await replayPage(replay.server, { source: "/archives/2/three.wacz", url: `${site.url}/c.html`, waitForImages: true, waitForText: "crawl 3" });
      expect(alone.images.map((img) => img.naturalWidth)).toEqual([0, 0]);
    } finally {
      expect(await replay.stop()).toBe(0);
    }
  });

  it("finds what crawl three requires under an http base URL (--from) and in the S3 store, by hash where the name differs", async () => {
    const alone = folderWith(["three"]);
    const fromHttp = await runCli("replay", ["--list", "--cwd", join(cwd, "none"), "--from", filesUrl, join(alone, "three.wacz")]);
    expect(fromHttp.stderr).toBe("");
    expect(fromHttp.stdout.trim().split("\n").map((l) => l.split(" ").slice(0, 3).join(" ") + " " + l.split(" ")[3])).toEqual([
      `one.wacz ${hashOf(waczPathOf(cwd, "one"))} ${sizeOf(waczPathOf(cwd, "one"))} ${filesUrl}one.wacz`,
      `two.wacz ${hashOf(waczPathOf(cwd, "two"))} ${sizeOf(waczPathOf(cwd, "two"))} ${filesUrl}two.wacz`,
      `three.wacz ${hashOf(waczPathOf(cwd, "three"))} ${sizeOf(waczPathOf(cwd, "three"))} ${join(alone, "three.wacz")}`,
    ]);
    // The source itself an http URL: what it requires is looked for beside it first.
    const byUrl = await runCli("replay", ["--list", "--cwd", join(cwd, "none"), `${filesUrl}three.wacz`]);
    expect(byUrl.stderr).toBe("");
    expect(byUrl.stdout.trim().split("\n").map((l) => l.split(" ")[3])).toEqual(DEPENDENT_COLLECTIONS.map((name) => `${filesUrl}${name}.wacz`));
    const store = { ...S3_CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_PATH: "crawls/" };
    const fromS3 = await runCli("replay", ["--list", "--cwd", join(cwd, "none"), join(alone, "three.wacz")], { env: store });
    expect(fromS3.stderr).toBe("");
    const lines = fromS3.stdout.trim().split("\n").map((l) => l.split(" "));
    expect(lines.map((l) => l.slice(0, 3))).toEqual(DEPENDENT_COLLECTIONS.map((name) => [`${name}.wacz`, hashOf(waczPathOf(cwd, name)), String(sizeOf(waczPathOf(cwd, name)))]));
    // Found in the store under the names the uploads gave them.
    expect(lines.slice(0, 2).map((l) => l[3])).toEqual([`s3://${BUCKET}/${storedKeyOf("one")}`, `s3://${BUCKET}/${storedKeyOf("two")}`]);
    // The uploads' webhook calls said where in the store each WACZ a crawl requires is.
    const requirement = (name: string) => ({ filename: `${name}.wacz`, hash: hashOf(waczPathOf(cwd, name)), size: sizeOf(waczPathOf(cwd, name)), crawlId: name, url: `${s3Url}/${BUCKET}/${storedKeyOf(name)}` });
    expect(told.map((t) => [t.id, t.requires])).toEqual([["one", []], ["two", [requirement("one")]], ["three", [requirement("one"), requirement("two")]]]);
    // The source itself read from the store too, and its pages replayed whole.
    const replay = await startReplay(["--cwd", join(cwd, "none"), `s3://${BUCKET}/${storedKeyOf("three")}`], store);
    try {
      const page = await replayPage(replay.server, { source: replay.sourcePath, url: `${site.url}/c.html`, waitForImages: true, waitForText: "crawl 3" });
      expect(page.images.map((img) => img.naturalWidth)).toEqual([40, 40]);
    } finally {
      expect(await replay.stop()).toBe(0);
    }
  });

  it("a removed dependency or a tampered one is one line naming it, what requires it and every place looked; exit 1", async () => {
    const removed = folderWith(["two", "three"]);
    const none = join(cwd, "none");
    const missing = await runCli("replay", ["--list", "--cwd", none, join(removed, "three.wacz")]);
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    const oneHash = hashOf(waczPathOf(cwd, "one"));
    expect(missing.stderr.trim().split("\n")).toEqual([
      `replay: one.wacz (${oneHash}, ${sizeOf(waczPathOf(cwd, "one"))} bytes), required by three.wacz, two.wacz, was not found: looked in ${removed}: not there`,
      "replay: 1 required WACZ file missing (--allowMissing opens what there is)",
    ]);

    const tampered = folderWith(["one", "two", "three"]);
    const bytes = readFileSync(join(tampered, "one.wacz"));
    bytes[600] = bytes[600]! ^ 0xff;
    writeFileSync(join(tampered, "one.wacz"), bytes);
    const wrong = await runCli("replay", ["--list", "--cwd", none, join(tampered, "three.wacz")]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain(`replay: one.wacz (${oneHash}, ${bytes.length} bytes), required by three.wacz, two.wacz, was not found: looked in ${tampered}: ${join(tampered, "one.wacz")} has another hash (${sha256(bytes)}, not ${oneHash})`);

    // --allowMissing serves what there is and says on the first page what is missing.
    const partial = await startReplay(["--allowMissing", "--cwd", none, join(removed, "three.wacz")]);
    try {
      expect(partial.line).toMatch(/^replay: 2 WACZ files, 1 missing: open /);
      const home = await (await fetch(`${partial.server.url}/`)).text();
      expect(home).toContain("one.wacz (sha256:");
      expect(home).toContain("required by three.wacz, two.wacz");
    } finally {
      expect(await partial.stop()).toBe(0);
    }
  });

  it("qa of crawl three's WACZ alone replays it with what it requires: it scores its pages as qa of the whole set does", async () => {
    const alone = folderWith(["three"]);
    const single = await runCli("qa", ["--qaSource", join(alone, "three.wacz"), "--cwd", cwd, "--collection", "qa-alone"], { timeoutMs: 300_000 });
    expect(single.stderr.split("\n").filter((l) => /"logLevel":"(error|warn)"/.test(l))).toEqual([]);
    expect(single.code).toBe(0);
    const whole = join(cwd, "whole.json");
    writeFileSync(whole, JSON.stringify({ resources: [
      { name: "three.wacz", path: waczPathOf(cwd, "three") },
      { name: "one.wacz", path: waczPathOf(cwd, "one"), fromDependency: true },
      { name: "two.wacz", path: waczPathOf(cwd, "two"), fromDependency: true },
    ] }));
    const set = await runCli("qa", ["--qaSource", whole, "--cwd", cwd, "--collection", "qa-set"], { timeoutMs: 300_000 });
    expect(set.code).toBe(0);
    type Summary = { results: { url: string; scores: { screenshot: number | null; text: number | null; resources: number; overall: number }; missing: number }[] };
    const read = (name: string) => (JSON.parse(readFileSync(join(cwd, "collections", name, "qa.json"), "utf8")) as Summary).results.sort((a, b) => a.url.localeCompare(b.url));
    const [fromAlone, fromSet] = [read("qa-alone"), read("qa-set")];
    expect(fromAlone.map((r) => r.url)).toEqual(PAGES_OF.three.map((p) => site.url + p).sort());
    expect(fromSet.map((r) => r.url)).toEqual(fromAlone.map((r) => r.url));
    for (const [i, page] of fromAlone.entries()) {
      // Every image replays, the revisited ones too: nothing is missing.
      expect([page.url, page.missing, page.scores.resources]).toEqual([page.url, 0, 1]);
      expect([page.url, page.scores.text]).toEqual([page.url, fromSet[i]!.scores.text]);
      expect(page.scores.screenshot).toBeCloseTo(fromSet[i]!.scores.screenshot!, 2);
    }
  });

  it("bad input: an unknown source, a folder without WACZ files, a bad --port are one line and exit 4", async () => {
    const noFile = await runCli("replay", ["--list", join(cwd, "nothing.wacz")]);
    expect([noFile.code, noFile.stderr]).toEqual([4, `replay: ${join(cwd, "nothing.wacz")}: no such file or folder\n`]);
    const empty = mkdtempSync(join(cwd, "empty-"));
    const noWacz = await runCli("replay", [empty]);
    expect([noWacz.code, noWacz.stderr]).toEqual([4, `replay: ${empty}: a folder with no .wacz file in it\n`]);
    const notWacz = join(empty, "x.wacz");
    writeFileSync(notWacz, "not a zip");
    const garbage = await runCli("replay", ["--list", notWacz]);
    expect(garbage.code).toBe(4);
    expect(garbage.stderr).toMatch(/^replay: .*x\.wacz: not a readable WACZ \(.*not a zip file.*\)\n$/);
    const port = await runCli("replay", ["--port", "http", waczPathOf(cwd, "three")]);
    expect([port.code, port.stderr]).toEqual([4, 'replay: --port takes a port number from 0 to 65535; got "http"\n']);
  });
});

/** The key crawl `name`'s upload was given in the store (s3rver keeps each object as <key>._S3rver_object). */
function storedKeyOf(name: string): string {
  const objects = readdirSync(join(cwd, "s3", BUCKET, "crawls")).filter((f) => f.endsWith(`-${name}.wacz._S3rver_object`));
  expect(objects).toHaveLength(1);
  return `crawls/${objects[0]!.replace(/\._S3rver_object$/, "")}`;
}
