import { createReadStream, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCParser, type WARCRecord } from "warcio";
import { NO_BEHAVIORS, runCli, type CliResult } from "../../helpers/cli.js";
import { startSeedSite, type SeedSite } from "../../helpers/seedSite.js";
import { readZip } from "../../helpers/zip.js";

// browsertrix-crawler 1.14.1's output flags, each shown by what it leaves on disk:
// --warcInfo (and --warcinfo.<name>, and a mapping in --config), --warcPrefix and env WARC_PREFIX,
// --combineWARC, --generateCDX, --reportSkipped. WARC files are read with warcio. Crawls whose flags do not get
// in each other's way serve several tests (started by the first test that needs one), two at a time.

let site: SeedSite;
let cwd: string;
beforeAll(async () => {
  site = await startSeedSite("rules");
  cwd = mkdtempSync(join(tmpdir(), "crawl-btx-output-"));
});
afterAll(async () => {
  await site?.close();
  rmSync(cwd, { recursive: true, force: true });
});

/** Run body with a site of its own (its request counts are the test's alone). */
async function withOwnSite<T>(body: (site: SeedSite) => Promise<T>): Promise<T> {
  const own = await startSeedSite("rules");
  try {
    return await body(own);
  } finally {
    await own.close();
  }
}

interface Parsed {
  record: WARCRecord;
  /** The record's header and block, as warcio read them. */
  type: string;
  id: string;
  offset: number;
  length: number;
  /** The record's whole content (warcinfo fields, HTTP payload), read fully. */
  content: Uint8Array;
}

async function readRecords(path: string | Buffer): Promise<Parsed[]> {
  const parser = new WARCParser(typeof path === "string" ? createReadStream(path) : [path]);
  const out: Parsed[] = [];
  for await (const record of parser) {
    const content = await record.readFully(false);
    out.push({
      record, content, type: record.warcType ?? "", id: record.warcHeader("WARC-Record-ID") ?? "",
      offset: parser.offset, length: parser.recordLength,
    });
  }
  return out;
}

/** application/warc-fields of a warcinfo record, as a map. */
function warcinfoFields(content: Uint8Array): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of Buffer.from(content).toString("utf8").split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return fields;
}

function crawl(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runCli("crawl", [...args, "--cwd", cwd, "--netIdleWait", "1", ...NO_BEHAVIORS], { timeoutMs: 240_000, env });
}

const collDir = (collection: string) => join(cwd, "collections", collection);
const warcNames = (collection: string) => readdirSync(join(collDir(collection), "archive")).filter((f) => f.endsWith(".warc.gz")).sort();

/** The seed and what it links to (robots.txt not obeyed). */
const LINKED = ["/site/", "/site/linked.html", "/site/private/linked.html"];
/** Small enough for several WARC files, large enough for a combined file to take two of them. */
const ROLLOVER = 1500;

/** A stand-in for a signing server (webrecorder's authsign): records each request, answers as told. */
async function startSigner(answer: { status: number; body: unknown }) {
  const requests: { auth: string | undefined; body: Record<string, unknown> }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      requests.push({ auth: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown> });
      res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/sign`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A crawl run with a signing server of its own, answering as told; the server's requests with it. */
async function crawlSigned(answer: { status: number; body: unknown }, args: string[], env: NodeJS.ProcessEnv) {
  const signer = await startSigner(answer);
  try {
    const run = await crawl(args, { ...env, WACZ_SIGN_URL: signer.url });
    return { run, requests: signer.requests };
  } finally {
    await signer.close();
  }
}

const SIGNED = { hash: "set by the test", software: "authsign 0.5.2", signature: "MEUCIQ-test", domain: "signer.test", domainCert: "-----BEGIN CERTIFICATE-----" };

/** Started on first use, then the same promise for every test that reads it. */
function shared<T>(start: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => (started ??= start());
}

/** --limit 1 with --reportSkipped, --warcInfo's string forms, and a signing server that fails. */
const limitedCrawl = shared(() =>
  crawlSigned({ status: 500, body: { error: "down" } }, [
    "--url", site.seed, "--collection", "limited", "--limit", "1", "--reportSkipped", "--generateWACZ", "--warcInfo", "operator: ONB",
    "--warcInfo", "isPartOf: Web Archive Austria\ndescription=domain crawl: 2026", "--warcInfo", "operator-only", "--warcInfo", "bad name=x",
  ], {}));

/** Signed, and without any of the output flags. */
const signedCrawl = shared(() => crawlSigned({ status: 200, body: SIGNED }, ["--url", site.seed, "--collection", "signed", "--generateWACZ"], { WACZ_SIGN_TOKEN: "s3cret" }));

describe.concurrent("browsertrix-crawler's output flags", () => {
  it("--warcinfo.<name>, --warcInfo, --warcPrefix, --combineWARC (past --rolloverSize) and --generateCDX, on disk", async () => {
    const run = await crawl([
      "--url", site.seed, "--collection", "flags", "--crawlId", "flagscrawl", "--warcinfo.operator", "Jane Doe", "--warcInfo", "isPartOf=Test Collection: one",
      "--warcPrefix", "my-org", "--rolloverSize", String(ROLLOVER), "--combineWARC", "--generateCDX", "--generateWACZ",
    ]);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(run.stderr).not.toMatch(/not implemented yet/);
    const dir = collDir("flags");
    const names = warcNames("flags");
    // A small rollover size: several WARC files, each named <warcPrefix>-<crawlId>-<timestamp>-<tag>.
    expect(names.length).toBeGreaterThan(2);
    for (const name of names) expect(name).toMatch(/^my-org-flagscrawl-\d{17}-[0-9a-f]{8}(-\d+)?\.warc\.gz$/);

    // --warcInfo: every WARC file starts with a warcinfo record holding the fields (ours stay beside them).
    const byFile = new Map<string, Parsed[]>();
    for (const name of names) {
      const records = await readRecords(join(dir, "archive", name));
      byFile.set(name, records);
      expect(records[0].type).toBe("warcinfo");
      expect(records[0].record.warcHeader("WARC-Filename")).toBe(name);
      const fields = warcinfoFields(records[0].content);
      expect(fields).toMatchObject({ operator: "Jane Doe", isPartOf: "Test Collection: one", format: "WARC File Format 1.1", "crawl-id": "flagscrawl" });
      expect(fields.software).toMatch(/warc-crawler/);
    }
    const all = [...byFile.values()].flat();
    const responsePaths = new Set(all.filter((r) => r.type === "response").map((r) => new URL(r.record.warcTargetURI ?? "").pathname));
    for (const path of LINKED) expect(responsePaths).toContain(path);

    // --warcPrefix: the WACZ files hold the same names under archive/.
    const waczNames: string[] = [];
    for (const wacz of readdirSync(dir).filter((f) => f.endsWith(".wacz"))) {
      const entries = await readZip(join(dir, wacz));
      waczNames.push(...[...entries.keys()].filter((k) => k.startsWith("archive/")).map((k) => k.slice("archive/".length)));
    }
    expect(waczNames.sort()).toEqual(names);

    // --combineWARC: browsertrix-crawler's grouping, largest file first, a new combined file once the next
    // file would take it to --rolloverSize; each combined file is its own warcinfo then the files' bytes as they are.
    const combined = readdirSync(dir).filter((f) => /^flags_\d+\.warc\.gz$/.test(f)).sort((a, b) => parseInt(a.slice(6)) - parseInt(b.slice(6)));
    const bySize = names.map((name) => ({ name, bytes: readFileSync(join(dir, "archive", name)) }))
      .sort((a, b) => b.bytes.length - a.bytes.length || (a.name < b.name ? -1 : 1));
    const seen: string[] = [];
    for (const [n, file] of combined.entries()) {
      expect(file).toBe(`flags_${n}.warc.gz`);
      const bytes = readFileSync(join(dir, file));
      const records = await readRecords(bytes);
      expect(records[0].type).toBe("warcinfo");
      expect(records[0].record.warcHeader("WARC-Filename")).toBe(file);
      expect(warcinfoFields(records[0].content)).toMatchObject({ operator: "Jane Doe", isPartOf: "Test Collection: one" });
      // After it, whole WARC files back to back, largest first, while the combined file stays under the rollover size.
      const inThis: string[] = [];
      let at = records[1].offset;
      while (at < bytes.length) {
        const next = bySize[seen.length];
        expect(bytes.subarray(at, at + next.bytes.length).equals(next.bytes), `${next.name} in ${file} at ${at}`).toBe(true);
        if (inThis.length) expect(at + next.bytes.length).toBeLessThan(ROLLOVER);
        seen.push(next.name);
        inThis.push(next.name);
        at += next.bytes.length;
      }
      if (n + 1 < combined.length) expect(bytes.length + bySize[seen.length].bytes.length).toBeGreaterThanOrEqual(ROLLOVER);
      // warcio reads it whole: exactly the records of those files, in order.
      expect(records.slice(1).map((r) => r.id)).toEqual(inThis.flatMap((name) => byFile.get(name)!.map((r) => r.id)));
    }
    expect(seen.sort()).toEqual(names);
    const combinedIds = (await Promise.all(combined.map((f) => readRecords(join(dir, f))))).flatMap((rs) => rs.slice(1).map((r) => r.id)).sort();
    expect(combinedIds).toEqual(all.map((r) => r.id).sort());

    // --generateCDX: indexes/index.cdxj, one line per response (and revisit) record, sorted, each
    // pointing at its record: read back at offset/length with warcio.
    const cdxj = readFileSync(join(dir, "indexes", "index.cdxj"), "utf8").trimEnd().split("\n");
    const indexed = all.filter((r) => r.type === "response" || r.type === "revisit");
    expect(cdxj).toHaveLength(indexed.length);
    expect([...cdxj].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))).toEqual(cdxj);
    const pointed: string[] = [];
    for (const line of cdxj) {
      const json = JSON.parse(line.slice(line.indexOf("{"))) as { url: string; offset: string; length: string; filename: string; digest: string; status: string };
      const file = readFileSync(join(dir, "archive", json.filename));
      const [record] = await readRecords(file.subarray(Number(json.offset), Number(json.offset) + Number(json.length)));
      expect(record.record.warcTargetURI).toBe(json.url);
      expect(record.type).toBe("response");
      expect(record.record.warcPayloadDigest).toBe(`sha256:${json.digest}`);
      expect(String(record.record.httpHeaders?.statusCode)).toBe(json.status);
      pointed.push(record.id);
    }
    expect(pointed.sort()).toEqual(indexed.map((r) => r.id).sort());
  }, 300_000);

  it("--config YAML: warcInfo mapping, WARC_PREFIX over warcPrefix, one combined WARC, reportSkipped (out of scope, robots.txt) also in the WACZ", () => withOwnSite(async (site) => {
    const config = join(cwd, "output.yaml");
    writeFileSync(config, [
      `url: ${site.seed}`, "collection: viaconfig", "crawlId: cfgcrawl", "warcInfo:", "  operator: Config Operator", "  hostname: crawler-7",
      "warcPrefix: from-config", "combineWARC: true", "reportSkipped: true", "generateWACZ: true", "useRobots: true",
      "exclude:", "  - /site/linked\\.html$", "",
    ].join("\n"));
    const linkedHits = site.hits("/site/linked.html");
    const run = await crawl(["--config", config], { WARC_PREFIX: "from-env" });
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const dir = collDir("viaconfig");
    const names = warcNames("viaconfig");
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(/^from-env-cfgcrawl-\d{17}-[0-9a-f]{8}(-\d+)?\.warc\.gz$/);
    const all: Parsed[] = [];
    for (const name of names) {
      const records = await readRecords(join(dir, "archive", name));
      expect(warcinfoFields(records[0].content)).toMatchObject({ operator: "Config Operator", hostname: "crawler-7" });
      all.push(...records);
    }
    const entries = await readZip(join(dir, "viaconfig.wacz"));
    expect([...entries.keys()].filter((k) => k.startsWith("archive/")).sort()).toEqual(names.map((n) => `archive/${n}`));

    // Below the rollover size: one combined file, its warcinfo, then every record of every WARC file.
    expect(readdirSync(dir).filter((f) => f.endsWith(".warc.gz"))).toEqual(["viaconfig_0.warc.gz"]);
    const combined = await readRecords(join(dir, "viaconfig_0.warc.gz"));
    expect(combined[0].type).toBe("warcinfo");
    expect(warcinfoFields(combined[0].content)).toMatchObject({ operator: "Config Operator", hostname: "crawler-7" });
    expect(combined.slice(1).map((r) => r.id).sort()).toEqual(all.map((r) => r.id).sort());

    // reports/skippedPages.jsonl: browsertrix-crawler's header and lines; the seed links one excluded page and one robots.txt disallows.
    const report = readFileSync(join(dir, "reports", "skippedPages.jsonl"), "utf8");
    const [header, ...lines] = report.trimEnd().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(header).toEqual({ format: "json-pages-1.0", id: "pages", title: "Skipped Pages", hasText: "false" });
    for (const line of lines) expect(Date.parse(String(line.ts))).not.toBeNaN();
    expect(lines.map(({ ts: _ts, ...rest }) => rest)).toEqual([
      { url: `${site.origin}/site/linked.html`, seedUrl: site.seed, depth: 1, seed: false, reason: "outOfScope" },
      { url: `${site.origin}/site/private/linked.html`, seedUrl: site.seed, depth: 1, seed: false, reason: "robotsTxt" },
    ]);
    expect(site.hits("/site/linked.html")).toBe(linkedHits);
    // As browsertrix-crawler does, the report goes into the WACZ, byte for byte, and into its datapackage.
    expect(entries.get("reports/skippedPages.jsonl")?.data.toString("utf8")).toBe(report);
    const datapackage = JSON.parse(entries.get("datapackage.json")!.data.toString("utf8")) as { resources: { path: string; bytes: number }[] };
    expect(datapackage.resources.find((r) => r.path === "reports/skippedPages.jsonl")?.bytes).toBe(Buffer.byteLength(report));
  }), 300_000);

  it("--reportSkipped lists the links --limit left out (pageLimit); without the flag there is no report", async () => {
    const { run } = await limitedCrawl();
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const lines = readFileSync(join(collDir("limited"), "reports", "skippedPages.jsonl"), "utf8").trimEnd().split("\n").slice(1)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [new URL(String(l.url)).pathname, l.reason, l.depth, l.seedUrl])).toEqual([
      ["/site/linked.html", "pageLimit", 1, site.seed],
      ["/site/private/linked.html", "pageLimit", 1, site.seed],
    ]);
    // Without --reportSkipped, --combineWARC, --generateCDX, --warcPrefix: none of their files.
    const { run: plain } = await signedCrawl();
    expect(plain.code, plain.stderr.slice(-2000)).toBe(0);
    expect(existsSync(join(collDir("signed"), "reports", "skippedPages.jsonl"))).toBe(false);
    expect(existsSync(join(collDir("signed"), "indexes"))).toBe(false);
    expect(readdirSync(collDir("signed")).filter((f) => f.endsWith(".warc.gz"))).toEqual([]);
    for (const name of warcNames("signed")) expect(name).toMatch(/^rec-signed-/);
  }, 300_000);

  it("--warcInfo's string form (ONB: \"operator: ONB\"): name: value lines are fields, anything else a warning, never a failed crawl", async () => {
    const { run } = await limitedCrawl();
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const warnings = run.stderr.split("\n").filter((line) => line.startsWith("crawl: warning: --warcInfo"));
    expect(warnings).toEqual([
      'crawl: warning: --warcInfo "operator-only" ignored: not a "name: value" or name=value field',
      'crawl: warning: --warcInfo "bad name=x" ignored: not a "name: value" or name=value field',
    ]);
    const names = warcNames("limited");
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      const [info] = await readRecords(join(collDir("limited"), "archive", name));
      const fields = warcinfoFields(info.content);
      expect(fields).toMatchObject({ operator: "ONB", isPartOf: "Web Archive Austria", description: "domain crawl: 2026" });
      expect(Object.keys(fields).filter((key) => /^\d+$/.test(key) || key.includes(" "))).toEqual([]);
    }
  }, 300_000);

  it("bad values: one line, exit code 4, nothing crawled", async () => {
    // Refused before a browser or Redis is started: the runs side by side.
    const cases = [
      [["--warcPrefix", "../up"], /--warcPrefix may hold only letters/],
    ] as const;
    const [runs, env, sign] = await Promise.all([
      Promise.all(cases.map(([args]) => crawl(["--url", site.seed, "--collection", "bad", ...args]))),
      crawl(["--url", site.seed, "--collection", "bad"], { WARC_PREFIX: "a b" }),
      crawl(["--url", site.seed, "--collection", "bad"], { WACZ_SIGN_URL: "ftp://127.0.0.1/sign" }),
    ]);
    for (const [i, [, message]] of cases.entries()) {
      const run = runs[i];
      expect(run.code).toBe(4);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
    expect(env.code).toBe(4);
    expect(env.stderr).toMatch(/WARC_PREFIX may hold only letters/);
    expect(sign.code).toBe(4);
    expect(sign.stderr.trim().split("\n")).toHaveLength(1);
    expect(sign.stderr).toMatch(/WACZ_SIGN_URL must be an http\(s\) URL/);
    expect(existsSync(collDir("bad"))).toBe(false);
    expect(statSync(cwd).isDirectory()).toBe(true);
  }, 120_000);
});

describe.concurrent("WACZ_SIGN_URL / WACZ_SIGN_TOKEN (browsertrix-crawler's WACZ signing)", () => {
  it("the datapackage digest and created time are posted with the bearer token; the answer is datapackage-digest.json's signedData", async () => {
    const { run, requests } = await signedCrawl();
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const entries = await readZip(join(collDir("signed"), "signed.wacz"));
    const datapackage = entries.get("datapackage.json")!.data;
    const digest = JSON.parse(entries.get("datapackage-digest.json")!.data.toString("utf8")) as Record<string, unknown>;
    const hash = `sha256:${createHash("sha256").update(datapackage).digest("hex")}`;
    expect(requests).toEqual([{ auth: "bearer s3cret", body: { hash, created: (JSON.parse(datapackage.toString("utf8")) as { created: string }).created } }]);
    expect(digest).toEqual({ path: "datapackage.json", hash, signedData: SIGNED });
  }, 120_000);

  it("a signing server that fails: the WACZ is written unsigned with one warning, exit 0", async () => {
    const { run, requests } = await limitedCrawl();
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.auth).toBeUndefined();
    expect(run.stdout + run.stderr).toMatch(/cannot sign the WACZ, written without a signature: the signing server answered 500/);
    const entries = await readZip(join(collDir("limited"), "limited.wacz"));
    const datapackage = entries.get("datapackage.json")!.data;
    const digest = JSON.parse(entries.get("datapackage-digest.json")!.data.toString("utf8")) as Record<string, unknown>;
    expect(digest).toEqual({ path: "datapackage.json", hash: `sha256:${createHash("sha256").update(datapackage).digest("hex")}` });
  }, 120_000);
});
