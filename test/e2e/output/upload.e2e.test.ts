import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFaultySite, type FaultySite } from "../../helpers/faultySite.js";
import { HEAVY_PAGE } from "../../helpers/hostile/upload.js";
import { logLines, NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { readZip } from "../../helpers/zip.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { closedPort } from "../../helpers/closedPort.js";

// A real S3-compatible server (s3rver: path-style, knows the access key S3RVER and refuses others; it
// does not check SigV4 signatures; supports multipart uploads) and a webhook receiver, both on loopback.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true"; // the test's own S3 client
const BUCKET = "archive";
const CREDENTIALS = { STORE_ACCESS_KEY: "S3RVER", STORE_SECRET_KEY: "S3RVER" };

let site: FaultySite;
let redis: TestRedis;
let s3rver: S3rver;
let s3: S3Client;
let s3Url: string;
let webhook: Server;
let webhookUrl: string;
let cwd: string;
const s3Events: { eventName: string; key: string }[] = [];
/** Webhook paths answered 404 (a test may take one out to show a rerun tells the webhook then). */
const refusedHookPaths = new Set(["/gone"]);
const webhookCalls: { path: string; contentType: string | undefined; body: string }[] = [];

beforeAll(async () => {
  site = await startFaultySite(2, {});
  redis = await startTestRedis();
  cwd = mkdtempSync(join(tmpdir(), "crawl-upload-"));
  s3rver = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: join(cwd, "s3"), configureBuckets: [{ name: BUCKET }] });
  s3rver.on("event", (event) => s3Events.push(...event.Records.map((r) => ({ eventName: r.eventName, key: decodeURIComponent(r.s3.object.key) }))));
  const { port } = await s3rver.run();
  s3Url = `http://127.0.0.1:${port}`;
  s3 = new S3Client({ endpoint: s3Url, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
  webhook = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      webhookCalls.push({ path: req.url ?? "", contentType: req.headers["content-type"], body });
      res.writeHead(refusedHookPaths.has(req.url ?? "") ? 404 : 200).end();
    });
  });
  await new Promise<void>((resolve) => webhook.listen(0, "127.0.0.1", resolve));
  webhookUrl = `http://127.0.0.1:${(webhook.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  s3?.destroy();
  await s3rver?.close();
  await new Promise((resolve) => webhook?.close(resolve));
  await site?.close();
  await redis?.stop();
  rmSync(cwd, { recursive: true, force: true });
});

function crawl(collection: string, seed: string, env: NodeJS.ProcessEnv, extra: string[] = []) {
  return runCli("crawl", ["--url", seed, "--collection", collection, "--cwd", cwd, "--generateWACZ", "--redisDedupeUrl", redis.url, ...NO_BEHAVIORS, ...extra],
    { env: { CRAWL_ID: collection, ...env }, timeoutMs: 170_000 });
}

async function objectKeys(prefix = ""): Promise<string[]> {
  const listing = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
  return (listing.Contents ?? []).map((o) => o.Key!).sort();
}

async function objectSha256(key: string): Promise<string> {
  const object = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
  return sha256(Buffer.from(await object.Body!.transformToByteArray()));
}

function sha256(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

describe("upload to S3-compatible storage (STORE_*) and WEBHOOK_URL, as browsertrix-crawler does", () => {
  it("puts the WACZ at STORE_PATH + @ts-@id.wacz byte for byte (one PUT) and POSTs browsertrix-crawler's JSON to WEBHOOK_URL", async () => {
    const result = await crawl("upload-small", site.url + "/", {
      ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_PATH: "crawls/team-a/", STORE_USER: "alice", WEBHOOK_URL: `${webhookUrl}/crawl-done`,
    }, ["--scopeType", "page"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const local = readFileSync(join(cwd, "collections", "upload-small", "upload-small.wacz"));

    const keys = await objectKeys();
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^crawls\/team-a\/\d{17}-upload-small\.wacz$/);
    expect(await objectSha256(keys[0]!)).toBe(sha256(local));
    expect(s3Events).toEqual([{ eventName: "ObjectCreated:Put", key: keys[0] }]);

    const name = keys[0]!.slice("crawls/team-a/".length);
    expect(webhookCalls).toHaveLength(1);
    expect(webhookCalls[0]!.path).toBe("/crawl-done");
    expect(webhookCalls[0]!.contentType).toBe("application/json");
    const body = JSON.parse(webhookCalls[0]!.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(["id", "user", "filename", "path", "size", "hash", "bytes", "completed", "requires"]);
    expect(body).toEqual({
      id: "upload-small", user: "alice", filename: `${s3Url}/${BUCKET}/crawls/team-a/${name}`, path: name,
      size: local.length, hash: sha256(local), bytes: local.length, completed: true, requires: [],
    });
  });

  it("exits 22 when the webhook refuses the call (a 4xx is not retried), the WACZ being uploaded", async () => {
    const result = await crawl("upload-hook404", site.url + "/", { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_FILENAME: "hook404.wacz", WEBHOOK_URL: `${webhookUrl}/gone` }, ["--scopeType", "page"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(22);
    expect(result.stderr.trim().split("\n").pop()).toBe(`crawl: webhook failed: upload-hook404.wacz was uploaded to ${s3Url}/${BUCKET}/hook404.wacz, but ${webhookUrl}/gone could not be told: the webhook answered 404 (run the same command again to retry the call)`);
    expect(webhookCalls.filter((c) => c.path === "/gone")).toHaveLength(1);
    const local = readFileSync(join(cwd, "collections", "upload-hook404", "upload-hook404.wacz"));
    expect(await objectSha256("hook404.wacz")).toBe(sha256(local));

    // The webhook works again: the same command tells it, without uploading the WACZ a second time.
    refusedHookPaths.delete("/gone");
    const puts = s3Events.filter((e) => e.key === "hook404.wacz").length;
    const rerun = await crawl("upload-hook404", site.url + "/", { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_FILENAME: "hook404.wacz", WEBHOOK_URL: `${webhookUrl}/gone` }, ["--scopeType", "page"]);
    expect(rerun.code, rerun.stderr.slice(-2000)).toBe(0);
    const told = webhookCalls.filter((c) => c.path === "/gone");
    expect(told).toHaveLength(2);
    expect(JSON.parse(told[1]!.body)).toMatchObject({ path: "hook404.wacz", hash: sha256(local), size: local.length, completed: true });
    expect(s3Events.filter((e) => e.key === "hook404.wacz").length).toBe(puts);
  });

  // The crawl of the test before, run a third time: uploaded, and its webhook told (on the second run).
  it("run again on the finished crawl, it neither uploads nor announces the same WACZ a second time", async () => {
    const keys = await objectKeys();
    const [events, calls] = [s3Events.length, webhookCalls.length];
    const third = await crawl("upload-hook404", site.url + "/", { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_FILENAME: "hook404.wacz", WEBHOOK_URL: `${webhookUrl}/gone` }, ["--scopeType", "page"]);
    expect(third.code, third.stderr.slice(-2000)).toBe(0);
    expect(logLines(third.stderr).filter((l) => l.message === "WACZ uploaded before: not sent again")).toHaveLength(1);
    expect(logLines(third.stderr).filter((l) => l.message === "uploading WACZ")).toEqual([]);
    expect(await objectKeys()).toEqual(keys);
    expect(s3Events).toHaveLength(events);
    expect(webhookCalls).toHaveLength(calls);
    // Told once: a third run announces nothing.
    expect(webhookCalls.filter((c) => c.path === "/gone")).toHaveLength(2);
  });

  it("sends a WACZ above the part size as a multipart upload, fills in STORE_FILENAME's @id and @hostname, and pushes the JSON to a redis:// WEBHOOK_URL", async () => {
    s3Events.length = 0;
    const result = await crawl("upload-heavy", site.url + HEAVY_PAGE, {
      ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}`, STORE_PATH: "/big/", STORE_FILENAME: "@id-@hostname.wacz",
      WEBHOOK_URL: `${redis.url.replace(/\/\d*$/, "")}/0/webhook-list`, WARC_CRAWLER_TEST_UPLOAD_PART_MIB: "5",
    }, ["--scopeType", "page"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    const local = readFileSync(join(cwd, "collections", "upload-heavy", "upload-heavy.wacz"));
    expect(local.length).toBeGreaterThan(6 * 1024 * 1024); // two parts at least

    const key = `big/upload-heavy-${hostname()}.wacz`;
    expect(await objectKeys("big/")).toEqual([key]);
    expect(await objectSha256(key)).toBe(sha256(local));
    // s3rver reports a completed multipart upload as a POST.
    expect(s3Events).toEqual([{ eventName: "ObjectCreated:Post", key }]);

    const pushed = (await redis.client.lrange("webhook-list", 0, -1)).map((j) => JSON.parse(j) as unknown);
    expect(pushed).toEqual([{
      id: "upload-heavy", user: "", filename: `${s3Url}/${BUCKET}/big/upload-heavy-${hostname()}.wacz`, path: `upload-heavy-${hostname()}.wacz`,
      size: local.length, hash: sha256(local), bytes: local.length, completed: true, requires: [],
    }]);
  });

  // These four wait most of their time (on retries, the time limit, pages held open) and do not look at
  // each other's objects or webhook calls: two at a time.
  it.concurrent("two processes on one crawl each upload the WACZ files they packaged; one STORE_FILENAME gives them distinct objects", async () => {
    // Few pages, each held 2 s after its load: either process, started a few seconds after the other on a
    // loaded machine, still finds pages left in the queue (both must write some), without loading many pages.
    const crowd = await startFaultySite(6, {});
    try {
      const env = { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_PATH: "shared/", STORE_FILENAME: "@id.wacz", WEBHOOK_URL: `${webhookUrl}/shared` };
      const args = ["--redisStoreUrl", redis.url, "--workers", "2", "--netIdleWait", "1", "--pageExtraDelay", "2"];
      const results = await Promise.all([crawl("upload-shared", crowd.url + "/", env, args), crawl("upload-shared", crowd.url + "/", env, args)]);
      for (const result of results) expect(result.code, result.stderr.slice(-2000)).toBe(0);
      const dir = join(cwd, "collections", "upload-shared");
      const localHashes = readdirSync(dir).filter((f) => f.endsWith(".wacz")).map((f) => sha256(readFileSync(join(dir, f))));
      expect(localHashes.length).toBeGreaterThanOrEqual(2); // both processes wrote pages

      const keys = await objectKeys("shared/");
      expect(keys).toEqual(["shared/upload-shared.wacz", ...localHashes.slice(1).map((_, i) => `shared/upload-shared-${i + 2}.wacz`)].sort());
      expect((await Promise.all(keys.map(objectSha256))).sort()).toEqual([...localHashes].sort());
      const told = webhookCalls.filter((c) => c.path === "/shared").map((c) => JSON.parse(c.body) as { path: string; hash: string });
      expect(told.map((b) => `shared/${b.path}`).sort()).toEqual(keys);
      expect(told.map((b) => b.hash).sort()).toEqual([...localHashes].sort());
    } finally {
      await crowd.close();
    }
  });

  it.concurrent("exits 22 when the store refuses the access key", async () => {
    const result = await crawl("upload-badkey", site.url + "/", { STORE_ACCESS_KEY: "NOBODY", STORE_SECRET_KEY: "S3RVER", STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/` }, ["--scopeType", "page"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(22);
    expect(result.stderr.trim().split("\n").pop()).toMatch(/^crawl: upload failed: .*: InvalidAccessKeyId: /);
    expect(existsSync(join(cwd, "collections", "upload-badkey", "upload-badkey.wacz"))).toBe(true);
    expect(await objectKeys()).not.toContainEqual(expect.stringContaining("upload-badkey"));
  });

  it.concurrent("exits 22 after its retries when the endpoint refuses connections, with one line saying so, keeping the WACZ on disk for a later run to upload", async () => {
    // A webhook path of its own: the tests beside it (concurrent) call theirs meanwhile.
    const endpoint = `http://127.0.0.1:${await closedPort()}/${BUCKET}/`;
    const result = await crawl("upload-refused", site.url + "/", { ...CREDENTIALS, STORE_ENDPOINT_URL: endpoint, WEBHOOK_URL: `${webhookUrl}/refused` }, ["--scopeType", "page"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(22);
    const lastLine = result.stderr.trim().split("\n").pop()!;
    expect(lastLine).toMatch(new RegExp(`^crawl: upload failed: .*upload-refused\\.wacz could not be put at ${endpoint.replace(/[/.]/g, "\\$&")}\\d{17}-upload-refused\\.wacz in 4 attempts: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+ \\(the WACZ is kept on disk\\)$`));
    const retries = logLines(result.stderr).filter((l) => l.context === "storage" && l.message.endsWith("failed, retrying"));
    expect(retries.map((l) => l.details.attempt)).toEqual([1, 2, 3]);
    const wacz = join(cwd, "collections", "upload-refused", "upload-refused.wacz");
    expect(existsSync(wacz)).toBe(true);
    expect(statSync(wacz).size).toBeGreaterThan(1000);
    expect(webhookCalls.filter((c) => c.path === "/refused")).toEqual([]);

    // The same command once the store is back uploads it.
    const again = await crawl("upload-refused", site.url + "/", { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_PATH: "later/" }, ["--scopeType", "page"]);
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const keys = await objectKeys("later/");
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^later\/\d{17}-upload-refused\.wacz$/);
    expect(await objectSha256(keys[0]!)).toBe(sha256(readFileSync(wacz)));
  });

  it.concurrent("announces the WACZ of a crawl stopped before its end (--timeLimit) with completed: false", async () => {
    const result = await crawl("upload-stopped", site.url + "/", { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/`, STORE_FILENAME: "stopped.wacz", WEBHOOK_URL: `${webhookUrl}/stopped` },
      // The limit counts from the crawl's start, browser launch included (as browsertrix-crawler's): 2 s was
      // reached before the first page began on a loaded CI machine, leaving nothing to package.
      ["--workers", "1", "--pageExtraDelay", "10", "--timeLimit", "8"]);
    expect(result.code, result.stderr.slice(-2000)).toBe(15);
    expect(logLines(result.stderr).find((l) => l.message === "crawl limit-reached")).toBeDefined();
    const local = readFileSync(join(cwd, "collections", "upload-stopped", "upload-stopped.wacz"));
    expect(await objectSha256("stopped.wacz")).toBe(sha256(local));
    const told = webhookCalls.filter((c) => c.path === "/stopped").map((c) => JSON.parse(c.body) as Record<string, unknown>);
    // The crawls of this file share one dedupe index: this one's revisits point into WACZ files uploaded before it,
    // and the webhook names each with the URL of the object holding its bytes.
    const pkg = JSON.parse((await readZip(join(cwd, "collections", "upload-stopped", "upload-stopped.wacz"))).get("datapackage.json")!.data.toString("utf8")) as { relation?: { requires: { hash: string }[] } };
    const requires = await Promise.all((pkg.relation?.requires ?? []).map(async (r) => {
      const keys = [];
      for (const key of await objectKeys()) if (`sha256:${await objectSha256(key)}` === r.hash) keys.push(key);
      expect(keys.length).toBeLessThanOrEqual(1);
      return { ...r, url: keys.length ? `${s3Url}/${BUCKET}/${keys[0]}` : null };
    }));
    expect(told).toEqual([{ id: "upload-stopped", user: "", filename: `${s3Url}/${BUCKET}/stopped.wacz`, path: "stopped.wacz", size: local.length, hash: sha256(local), bytes: local.length, completed: false, requires }]);
  });

  it("uploads nothing without --generateWACZ, and says so; a bad STORE_ENDPOINT_URL is one line and exit 4", async () => {
    const before = await objectKeys();
    const result = await runCli("crawl", ["--url", site.url + "/", "--collection", "upload-nowacz", "--cwd", cwd, "--scopeType", "page", ...NO_BEHAVIORS],
      { env: { ...CREDENTIALS, STORE_ENDPOINT_URL: `${s3Url}/${BUCKET}/` } });
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(logLines(result.stderr).filter((l) => l.logLevel === "warn" && l.message.startsWith("STORE_ENDPOINT_URL is set but --generateWACZ is not"))).toHaveLength(1);
    expect(await objectKeys()).toEqual(before);

    const bad = await runCli("crawl", ["--url", site.url + "/", "--cwd", cwd], { env: { STORE_ENDPOINT_URL: `${s3Url}/` } });
    expect(bad.code).toBe(4);
    expect(bad.stderr.trim()).toBe(`crawl: STORE_ENDPOINT_URL must name the bucket as its first path segment (http://host:port/bucket/), got "${s3Url}/"`);
  });
});
