import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { Redis } from "ioredis";
import { dump } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EmbeddedRedis } from "../../../src/redis/embedded.js";
import { startTinyproxy, type RunningProxy } from "../../helpers/proxyServers.js";
import { startProxySite, type ProxySite } from "../../helpers/proxySite.js";
import { readZip } from "../../helpers/zip.js";
import { descendsFrom, processes } from "../../helpers/processes.js";

// No secret the crawl is given lands in a file it leaves, nor on a command line: a YAML config with a Redis
// password, a proxy's user:password, a presigned-style sitemap URL (?X-Amz-Signature=, ?X-Amz-Credential=);
// a Redis user:password on the command line; in the environment a lone token before `@` and a ?token= (in
// CRAWL_ARGS) and secret variables. The crawl is interrupted after its first page with --saveState always,
// then resumed from its state file alone (plus the same command line and environment): every file under the
// collection (the WACZ unpacked, WARCs decompressed), the logs on stderr, and every process's command line
// while it runs are searched for each secret.

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const SECRETS = {
  redis: "Redis-st0re-pw-4b1e",
  proxy: "Pr0xy-pw-93ac77",
  dedupe: "Dedupe-pw-5f20aa",
  signature: "Sig0a1b2c3d4e5f6a7b8c9d0",
  credential: "AKIAEXAMPLECRED77",
  loneToken: "ghp_LoneTokenBeforeAt99",
  queryToken: "QueryToken-8e8e8e",
  storeSecretKey: "StoreSecretKey-1234abcd",
  signToken: "SignToken-abcdef9876",
};
const SITE_HOST = "127.0.0.3";

let dir: string;
let site: ProxySite;
let tinyproxy: RunningProxy;
let redis: EmbeddedRedis;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "secrets-at-rest-"));
  site = await startProxySite(SITE_HOST);
  tinyproxy = await startTinyproxy(dir, "bob", SECRETS.proxy);
  redis = new EmbeddedRedis({ dataDir: join(dir, "redis"), persist: false, password: SECRETS.redis });
  await redis.start();
  // A second user for the dedupe index, named on the command line.
  const admin = new Redis(redis.url);
  await admin.call("ACL", "SETUSER", "dedupe", "on", `>${SECRETS.dedupe}`, "~*", "&*", "+@all");
  admin.disconnect();
});

afterAll(async () => {
  tinyproxy?.stop();
  await site?.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stderr: string;
  /** Command lines holding a secret, seen while the crawl ran. */
  holding: string[];
  /** Command lines of Chromium processes the crawler started. */
  chromium: number;
}

/** Run the crawl, watching every command line; with `interrupt`, SIGINT once its first page is crawled. */
async function crawl(args: string[], env: NodeJS.ProcessEnv, interrupt: boolean): Promise<Run> {
  const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  let interrupted = false;
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
    if (interrupt && !interrupted && stderr.includes('"page crawled"')) {
      interrupted = true;
      child.kill("SIGINT");
    }
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  let running = true;
  void exited.then(() => (running = false));
  const holding = new Set<string>();
  const chromium = new Set<number>();
  const timer = setTimeout(() => child.kill("SIGKILL"), 150_000);
  while (running) {
    const all = processes();
    // The crawler's own arguments hold the command-line secret until it has read them and rewritten its
    // title (its first moments, as any program's): it is checked once the crawl has started.
    const started = stderr.includes('"crawl started"');
    for (const [pid, { line }] of all) {
      if (pid === child.pid && !started) continue;
      for (const [name, secret] of Object.entries(SECRETS)) if (line.includes(secret)) holding.add(`${name} in ${pid}: ${line.slice(0, 200)}`);
      if (child.pid && pid !== child.pid && /chrom/i.test(line) && descendsFrom(pid, child.pid, all)) chromium.add(pid);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  clearTimeout(timer);
  return { code: await exited, stderr, holding: [...holding], chromium: chromium.size };
}

/** Every file under `root`, its bytes as stored and, for gzip files (WARCs), decompressed; a WACZ's entries too. */
async function contents(root: string): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  for (const name of readdirSync(root, { recursive: true, encoding: "utf8" })) {
    const path = join(root, name);
    if (!statSync(path).isFile()) continue;
    const bytes = readFileSync(path);
    found.set(path, bytes);
    if (name.endsWith(".gz")) found.set(`${path} (gunzipped)`, gunzipSync(bytes));
    if (name.endsWith(".wacz")) {
      for (const [entry, { data }] of await readZip(path)) {
        found.set(`${path}!${entry}`, data);
        if (entry.endsWith(".gz")) found.set(`${path}!${entry} (gunzipped)`, gunzipSync(data));
      }
    }
  }
  return found;
}

function secretsIn(text: string | Buffer): string[] {
  return Object.entries(SECRETS).filter(([, secret]) => text.includes(secret)).map(([name]) => name);
}

describe("secrets given to a crawl", () => {
  it("are in no file it leaves, no log line, no command line; its saved state (0600) still resumes it", async () => {
    const origin = `http://${SITE_HOST}:${site.port}`;
    const config = join(dir, "crawl.yaml");
    writeFileSync(config, dump({
      seeds: [`${origin}/`],
      scopeType: "prefix",
      collection: "secrets",
      cwd: join(dir, "crawls"),
      redisStoreUrl: `redis://:${SECRETS.redis}@127.0.0.1:${redis.port}/0`,
      proxyServer: `http://bob:${SECRETS.proxy}@127.0.0.1:${tinyproxy.port}`,
      useSitemap: `${origin}/sitemap.xml?X-Amz-Credential=${SECRETS.credential}&X-Amz-Signature=${SECRETS.signature}`,
      behaviors: "",
      netIdleWait: 1,
      // A pause after each page: the interrupt comes while the next one is still queued.
      pageExtraDelay: 3,
      saveState: "always",
      saveStateInterval: 1,
      generateWACZ: true,
    }));
    const commandLine = ["--redisDedupeUrl", `redis://dedupe:${SECRETS.dedupe}@127.0.0.1:${redis.port}/1`];
    const env = {
      CRAWL_ARGS: `--loginUrl http://${SECRETS.loneToken}@${SITE_HOST}:${site.port}/login?token=${SECRETS.queryToken}`,
      STORE_SECRET_KEY: SECRETS.storeSecretKey,
      WACZ_SIGN_TOKEN: SECRETS.signToken,
      PROXY_SERVER: "",
      PROXY_HOST: "",
      PROXY_PORT: "",
    };

    const first = await crawl(["--config", config, ...commandLine], env, true);
    expect(first.stderr).toContain('"page crawled"');
    const collection = join(dir, "crawls", "collections", "secrets");
    const stateDir = join(collection, "crawls");
    const stateFiles = readdirSync(stateDir).filter((f) => f.endsWith(".yaml")).sort();
    expect(stateFiles.length).toBeGreaterThan(0);
    const stateFile = join(stateDir, stateFiles.at(-1)!);
    expect(statSync(stateFile).mode & 0o777).toBe(0o600);
    const state = readFileSync(stateFile, "utf8");
    expect(state).toMatch(/queued:\s*\n\s*- /);
    expect(state).toContain("secretsWithheld");

    // Resumed from the state file: what it withheld comes again from crawl.yaml, the command line and the environment.
    const second = await crawl(["--config", stateFile, ...commandLine], env, false);
    expect(second.code, second.stderr.slice(-2000)).toBe(0);
    // Each run packaged its own WACZ: together both pages, fetched through the proxy with its credentials.
    const waczFiles = readdirSync(collection).filter((f) => f.endsWith(".wacz"));
    expect(waczFiles.sort()).toEqual(["secrets-2.wacz", "secrets.wacz"]);
    let pages = "";
    for (const file of waczFiles) {
      const wacz = await readZip(join(collection, file));
      pages += ["pages/pages.jsonl", "pages/extraPages.jsonl"].map((name) => wacz.get(name)?.data.toString() ?? "").join("");
    }
    expect(pages).toContain(`${origin}/"`);
    expect(pages).toContain(`${origin}/page2.html"`);
    expect(site.requests.some((r) => r.path === "/page2.html" && r.peer === "tinyproxy")).toBe(true);

    expect(first.chromium + second.chromium).toBeGreaterThan(0);
    expect([...first.holding, ...second.holding]).toEqual([]);
    expect({ first: secretsIn(first.stderr), second: secretsIn(second.stderr) }).toEqual({ first: [], second: [] });
    const leaks = [...(await contents(collection))].flatMap(([path, bytes]) => secretsIn(bytes).map((name) => `${name} in ${path}`));
    expect(leaks).toEqual([]);
  }, 330_000);
});
