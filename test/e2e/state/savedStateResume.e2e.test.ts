import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_BEHAVIORS, runCli } from "../../helpers/cli.js";
import { readZip } from "../../helpers/zip.js";

/** A seed /s/ linking to eight leaf pages, each answered after a short delay; requests counted per path. */
const LEAVES = Array.from({ length: 8 }, (_, i) => `/s/p${i + 1}`);
const ALL_PAGES = ["/s/", ...LEAVES];

let server: Server;
let origin = "";
let cwd: string;
const hits = new Map<string, number>();

beforeAll(async () => {
  cwd = mkdtempSync(join(tmpdir(), "saved-state-e2e-"));
  server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const html = (title: string, links: string[]) =>
      `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1>${links.map((l) => `<a href="${l}">${l}</a>`).join(" ")}</body></html>`;
    const body = path === "/s/" ? html("seed", LEAVES) : LEAVES.includes(path) ? html(path, []) : null;
    setTimeout(() => {
      if (!body) res.writeHead(404, { "content-type": "text/plain" }).end("not found");
      else res.writeHead(200, { "content-type": "text/html" }).end(body);
    }, path === "/s/" ? 0 : 300);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(cwd, { recursive: true, force: true });
});

const sorted = (list: string[]) => [...list].sort();
const collectionDir = (name: string) => join(cwd, "collections", name);

/** Start a crawl; once `until` says so of its stderr so far, kill it with `signal`. */
function crawlKilled(args: string[], until: (stderr: string) => boolean, signal: NodeJS.Signals, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["dist/src/cli/crawl.js", ...args], { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
    let stderr = "";
    let sent = false;
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
      if (!sent && until(stderr)) {
        sent = true;
        child.kill(signal);
      }
    });
    child.on("exit", (code, killedBy) => resolve({ code, signal: killedBy, stderr }));
  });
}

/** The site's pages requested so far (not the browser's /favicon.ico). */
const pagesHit = () => sorted([...hits.keys()].filter((path) => path.startsWith("/s/")));
const pagesCrawled = (stderr: string) => stderr.split("\n").filter((l) => l.includes('"message":"page crawled"')).length;

describe("resuming from a state file", () => {
  it("a crawl killed while it loads the state file loads it again when rerun: every queued page is crawled, no finished one", async () => {
    hits.clear();
    const entry = (path: string) => JSON.stringify({ url: origin + path, seedId: 0, depth: 1, extraHops: 0 });
    const file = join(cwd, "killed-load.yaml");
    writeFileSync(file, [
      `seeds:`, `  - ${origin}/s/`, `scopeType: prefix`, `workers: 1`,
      `state:`,
      `  finished:`, ...["/s/", "/s/p1", "/s/p2"].map((p) => `    - ${origin}${p}`),
      `  queued:`, ...LEAVES.slice(2).map((p) => `    - '${entry(p)}'`),
      `  pending: []`, `  failed: []`, `  errors: []`, `  extraSeeds: []`, `  excluded: []`, `  sitemapDone: false`,
    ].join("\n") + "\n");
    const args = ["--config", file, "--collection", "killed-load", "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0", "--statsFilename", join(cwd, "killed-load.json")];
    // Killed once the frontier was emptied for the load, before the saved pages are in.
    const killed = await crawlKilled(args, (stderr) => stderr.includes("test pause at state-load"), "SIGKILL", { CRAWLER_TEST_PAUSE_AT: "state-load", CRAWLER_TEST_PAUSE_MS: "120000" });
    expect(killed.signal).toBe("SIGKILL"); // a shell would say 137
    expect(pagesHit()).toEqual([]);

    const rerun = await runCli("crawl", args);
    expect(rerun.code, rerun.stderr.slice(-2000)).toBe(0);
    expect(rerun.stderr).toContain("crawl state loaded from the --config file");
    expect(pagesHit()).toEqual(sorted(LEAVES.slice(2)));
    for (const path of LEAVES.slice(2)) expect(hits.get(path), path).toBe(1);
    expect(JSON.parse(readFileSync(join(cwd, "killed-load.json"), "utf8"))).toMatchObject({ crawled: 6, failed: 0, queued: 0, pending: 0 });
  }, 240_000);

  it("--generateWACZ in the same collection: the pages crawled before the kill stay in the WACZ pages list", async () => {
    hits.clear();
    const name = "same-wacz";
    const base = ["--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0", "--workers", "1", "--generateWACZ"];
    // Killed once three pages are crawled and a state file written after them.
    const killed = await crawlKilled(
      ["--url", `${origin}/s/`, ...base, "--saveState", "always", "--saveStateInterval", "1"],
      (stderr) => pagesCrawled(stderr) >= 3 && stderr.slice(stderr.lastIndexOf('"message":"page crawled"')).includes('"message":"crawl state saved"'),
      "SIGKILL",
    );
    expect(killed.signal).toBe("SIGKILL");
    const crawls = join(collectionDir(name), "crawls");
    const files = readdirSync(crawls).filter((f) => f.endsWith(".yaml")).sort();
    const stateFile = join(crawls, files.at(-1)!);
    expect(readFileSync(stateFile, "utf8")).toContain("crawlStateFileEnd: true");
    const before = pagesHit();
    expect(before.length).toBeGreaterThanOrEqual(3);

    // The same file cut short inside its finished list (still valid YAML): refused, one line naming it, exit 4.
    const text = readFileSync(stateFile, "utf8");
    const cut = join(cwd, "cut-state.yaml");
    writeFileSync(cut, text.slice(0, text.indexOf("\n", text.indexOf("  finished:\n") + 14) + 1));
    const refused = await runCli("crawl", ["--config", cut, ...base]);
    expect(refused.code).toBe(4);
    expect(refused.stderr.trim().split("\n")).toEqual([`crawl: --config ${cut}: this state file was cut short (it lacks its last line "crawlStateFileEnd: true"): refused; resume from a whole one`]);

    const resumed = await runCli("crawl", ["--config", stateFile, ...base]);
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    expect(resumed.stderr).toContain("crawl state loaded from the --config file");
    const listed: string[] = [];
    for (const wacz of readdirSync(collectionDir(name)).filter((f) => f.endsWith(".wacz"))) {
      const zip = await readZip(join(collectionDir(name), wacz));
      for (const list of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
        const lines = zip.get(list)?.data.toString().trim().split("\n").slice(1) ?? [];
        listed.push(...lines.map((l) => new URL((JSON.parse(l) as { url: string }).url).pathname));
      }
    }
    expect(existsSync(join(collectionDir(name), "pages", "pages.jsonl"))).toBe(true);
    expect(sorted(listed)).toEqual(sorted(ALL_PAGES));
  }, 240_000);

  it("a seed with a password: no state file holds the password, and the log says what was left out", async () => {
    hits.clear();
    const name = "password-seed";
    const seed = origin.replace("http://", "http://alice:s3cr3tpw@") + "/s/";
    const run = await runCli("crawl", ["--url", seed, "--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "0", "--workers", "1", "--saveState", "always", "--saveStateInterval", "1"]);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const crawls = join(collectionDir(name), "crawls");
    const files = readdirSync(crawls).filter((f) => f.endsWith(".yaml"));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const text = readFileSync(join(crawls, file), "utf8");
      expect(text, file).not.toContain("s3cr3tpw");
      expect(text, file).toContain("secretsWithheld:");
      expect(text, file).toContain(`alice@127.0.0.1`);
    }
    const saved = run.stderr.split("\n").filter((l) => l.includes('"message":"crawl state saved"'));
    expect(saved.length).toBeGreaterThan(0);
    for (const line of saved) expect(JSON.parse(line)).toMatchObject({ details: { settingsWithheld: ["url"], urlPasswordsWithheld: expect.any(Number) } });
  }, 240_000);
});
