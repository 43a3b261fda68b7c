// Logins through browser profiles: create-login-profile (automated and interactive), crawl --profile
// (ours, browsertrix-crawler's layout, from a URL), the expired-session case. Everything on loopback.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import puppeteer from "puppeteer-core";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listProfile } from "../../../src/profile/profileArchive.js";
import { runCli, NO_BEHAVIORS, type CliResult } from "../../helpers/cli.js";
import { CDN_HOST, FIELD_BOXES, MEMBER_IMAGES, MEMBER_PAGES, PASSWORD, startLoginSite, USER, type LoginSite } from "../../helpers/loginSite.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";
import { BROWSER_ARGS, closeBrowser, startReplayServer } from "../../helpers/replay.js";
import { openReplaySession } from "../../helpers/replaySession.js";
import { httpHeader, readWarcRecords, type RawRecord } from "../../helpers/warcFile.js";

const ROOT = new URL("../../../", import.meta.url).pathname;
const ENV = { CRAWLER_TEST_HOSTS: `${CDN_HOST}=127.0.0.1` };

let site: LoginSite;
let cwd: string;
let profile: string;
let created: CliResult;
/** The upload storage (s3rver) holding the profile as team-a/profiles/members.tar.gz. */
let store: S3rver;
let storeEnv: NodeJS.ProcessEnv;

const pathOf = (url: string) => new URL(url).pathname + new URL(url).search;

/** Every page listed in the collection: pages/*.jsonl, and pages/<wacz>/*.jsonl of another writer's WACZ. */
function pagesOf(collection: string): string[] {
  const dir = join(cwd, "collections", collection, "pages");
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".jsonl")).flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter((l) => l.startsWith("{") && !l.includes('"format"')))
    .map((l) => pathOf((JSON.parse(l) as { url: string }).url)).sort();
}

function recordsOf(collection: string): RawRecord[] {
  const dir = join(cwd, "collections", collection, "archive");
  return readdirSync(dir).flatMap((f) => readWarcRecords(join(dir, f)));
}

const ofType = (records: RawRecord[], type: string) => records.filter((r) => r.headers.get("warc-type") === type);
const targetOf = (r: RawRecord) => r.headers.get("warc-target-uri") ?? "";
const statusOf = (r: RawRecord) => Number(/^HTTP\/[\d.]+ (\d+)/.exec(r.httpHead ?? "")?.[1] ?? 0);

function crawl(collection: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runCli("crawl", ["--url", `${site.url}/members/`, "--collection", collection, "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "1", ...args], { env: { ...ENV, ...env }, timeoutMs: 150_000 });
}

beforeAll(async () => {
  site = await startLoginSite();
  cwd = mkdtempSync(join(tmpdir(), "profile-e2e-"));
  profile = join(cwd, "profile.tar.gz");
  const started = Date.now();
  created = await runCli("create-login-profile", ["--url", site.loginUrl, "--user", USER, "--password", PASSWORD, "--filename", profile], { env: ENV });
  console.log(`create-login-profile --automated: ${Date.now() - started} ms`);
  store = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: join(cwd, "s3"), configureBuckets: [{ name: "store" }] });
  const { port } = await store.run();
  storeEnv = { STORE_ENDPOINT_URL: `http://127.0.0.1:${port}/store/`, STORE_PATH: "team-a/", STORE_ACCESS_KEY: "S3RVER", STORE_SECRET_KEY: "S3RVER" };
  if (created.code === 0) {
    const client = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } });
    await client.send(new PutObjectCommand({ Bucket: "store", Key: "team-a/profiles/members.tar.gz", Body: readFileSync(profile) }));
    client.destroy();
  }
}, 120_000);

afterAll(async () => {
  await store?.close();
  await site?.close();
  if (!process.env.KEEP_PROFILE_TEST) rmSync(cwd, { recursive: true, force: true });
  else console.log(`kept ${cwd}`);
});

describe("create-login-profile --automated", () => {
  it("logs in and writes the Chromium user-data folder as a tar.gz readable by its owner only", async () => {
    expect(created.code, created.stderr.slice(-2000)).toBe(0);
    expect(site.logins).toBe(1);
    expect(statSync(profile).mode & 0o777).toBe(0o600);
    const names = await listProfile(profile);
    expect(names).toContain("./");
    expect(names).toContain("./Local State");
    expect(names).toContain("./Default/Cookies");
    expect(names).toContain("./Default/Preferences");
    expect(names).toContain("./warc-crawler-profile.json");
    expect(names.filter((n) => /Singleton|\/Cache\//.test(n))).toEqual([]);
    // The cookie is the login: never printed.
    expect(created.stdout + created.stderr).not.toContain(site.lastSession!);
  });
});

/**
 * One crawl with the profile serves three tests (the first to ask starts it): --profile @name from the upload
 * storage (the --profile file's path is taken by the other crawls of this file), --workers 2, --generateWACZ
 * for the replay, --saveProfile.
 */
let membersCrawl: Promise<CliResult> | null = null;
const savedProfile = () => join(cwd, "saved", "after-crawl.tar.gz");
function crawlMembers(): Promise<CliResult> {
  membersCrawl ??= crawl("members", ["--profile", "@profiles/members.tar.gz", "--workers", "2", "--generateWACZ", "--saveProfile", savedProfile()], storeEnv);
  return membersCrawl;
}

// Its two crawls are independent (their own collections; the one look at the site's requests, no login
// cookie sent to the CDN, holds for both): two at a time (describe.concurrent; maxConcurrency in
// vitest.config.ts). The other describes run in order: they count logins and requests, or expire sessions.
describe.concurrent("crawl --profile", () => {
  it("without a profile the crawl sees only the login page", async () => {
    const result = await crawl("anonymous", []);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(pagesOf("anonymous")).toEqual(["/login?next=%2Fmembers%2F", "/members/"]);
    const responses = ofType(recordsOf("anonymous"), "response").map((r) => pathOf(targetOf(r)));
    expect(responses.filter((p) => p.startsWith("/members/") && p !== "/members/")).toEqual([]);
  });

  it("with the profile every members page and image is archived, and replays with its images", async () => {
    const started = Date.now();
    const result = await crawlMembers();
    console.log(`crawl --profile, 4 pages, 2 workers: ${Date.now() - started} ms`);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(pagesOf("members")).toEqual([...MEMBER_PAGES].sort());
    const records = recordsOf("members");
    const ok = ofType(records, "response").filter((r) => statusOf(r) === 200).map((r) => pathOf(targetOf(r)));
    for (const image of Object.values(MEMBER_IMAGES).flat()) expect(ok).toContain(image);
    expect(ok.filter((p) => p.startsWith("/login"))).toEqual([]);

    const server = await startReplayServer(join(cwd, "collections", "members"));
    try {
      // The pages one after the other in one browser.
      const session = await openReplaySession(server, { timeoutMs: 90_000 });
      try {
        for (const path of MEMBER_PAGES) {
          const replayed = await session.replay({ source: "/archives/members.wacz", url: site.url + path, waitForText: "Members only", waitForImages: true, timeoutMs: 90_000 });
          expect(replayed.title).toBe(`Members ${path}`);
          expect(replayed.images.length).toBeGreaterThanOrEqual(MEMBER_IMAGES[path].length);
          for (const image of replayed.images) expect(image.naturalWidth, image.src).toBeGreaterThan(0);
        }
      } finally {
        await session.close();
      }
    } finally {
      await server.close();
    }
  }, 240_000);

  it("with --workers 2 too; the login cookie goes to the login site only; --saveProfile saves the browser's profile", async () => {
    const saved = savedProfile();
    const result = await crawlMembers();
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(statSync(saved).mode & 0o777).toBe(0o600);
    expect(await listProfile(saved)).toEqual(expect.arrayContaining(["./Default/Cookies", "./warc-crawler-profile.json"]));
    expect(readdirSync(join(cwd, "saved"))).toEqual(["after-crawl.tar.gz"]);
    expect(pagesOf("members")).toEqual([...MEMBER_PAGES].sort());
    const requests = ofType(recordsOf("members"), "request");
    const cookieOf = (r: RawRecord) => httpHeader(r, "cookie") ?? "";
    const toSite = requests.filter((r) => targetOf(r).startsWith(site.url));
    const toCdn = requests.filter((r) => targetOf(r).startsWith(site.cdnUrl));
    expect(toCdn.length).toBeGreaterThan(0);
    for (const r of toCdn) expect(cookieOf(r)).not.toContain("session=");
    expect(toSite.length).toBeGreaterThan(0);
    for (const r of toSite) expect(cookieOf(r), targetOf(r)).toMatch(/(^|; )session=[0-9a-f]{32}/);
    // And the server saw it so too.
    expect(site.requests.filter((r) => r.host === CDN_HOST && (r.cookie ?? "").includes("session="))).toEqual([]);
  });
});

const loginPagesIn = (collection: string) => pagesOf(collection).filter((p) => p.startsWith("/login"));

describe("crawl --profile with the rest of the crawler", () => {
  it("two processes of one crawl, then a --refresh run: every members page, never the login page", async () => {
    const redis: TestRedis = await startTestRedis();
    try {
      // Two processes on one crawl (one Redis), each browser from its own copy of the profile.
      const shared = ["--profile", profile, "--crawlId", "profiled", "--redisStoreUrl", redis.url, "--redisDedupeUrl", redis.url];
      const [a, b] = await Promise.all([crawl("profiled", shared), crawl("profiled", shared)]);
      for (const run of [a, b]) expect(run.code, run.stderr.slice(-2000)).toBe(0);
      expect(pagesOf("profiled")).toEqual([...MEMBER_PAGES].sort());
      const ok = ofType(recordsOf("profiled"), "response").filter((r) => statusOf(r) === 200).map((r) => pathOf(targetOf(r)));
      for (const image of Object.values(MEMBER_IMAGES).flat()) expect(ok).toContain(image);

      // The same crawl again with --refresh: conditional requests with the login cookie, nothing sent to the login page.
      const before = site.requests.length;
      const refresh = await crawl("profiled-refresh", ["--profile", profile, "--redisDedupeUrl", redis.url, "--refresh"]);
      expect(refresh.code, refresh.stderr.slice(-2000)).toBe(0);
      expect(pagesOf("profiled-refresh")).toEqual([...MEMBER_PAGES].sort());
      expect(loginPagesIn("profiled-refresh")).toEqual([]);
      const seen = site.requests.slice(before).filter((r) => r.host === "main");
      expect(seen.filter((r) => r.path.startsWith("/login"))).toEqual([]);
      for (const r of seen.filter((r) => r.path.startsWith("/members/"))) expect(r.cookie ?? "", r.path).toMatch(/(^|; )session=[0-9a-f]{32}/);
      expect(seen.filter((r) => r.path.startsWith("/members/")).length).toBeGreaterThanOrEqual(MEMBER_PAGES.length);
    } finally {
      await redis.stop();
    }
  }, 240_000);
});

// The resumed crawl mostly waits (its pages are held 3 s each), and the browsertrix-crawler profile's test
// (next) looks at nothing but its own crawl: the two at once (adjacent concurrent describes).
describe.concurrent("crawl --profile, interrupted", () => {
  it("an interrupted crawl resumed by the same command: every members page, never the login page", async () => {
    // Interrupted after its first page (SIGINT: exit 11), then the same command resumes with the profile.
    const args = ["--url", `${site.url}/members/`, "--collection", "resumed", "--cwd", cwd, ...NO_BEHAVIORS, "--netIdleWait", "1", "--profile", profile, "--pageExtraDelay", "3"];
    const child = spawn(process.execPath, [join(ROOT, "dist/src/cli/crawl.js"), ...args], { cwd: ROOT, env: { ...process.env, ...ENV } });
    child.stderr.resume();
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await until(() => { try { return pagesOf("resumed").length >= 1; } catch { return false; } }, "the first page listed", 90_000);
      child.kill("SIGINT");
      expect(await exited).toBe(11);
    } finally {
      child.kill("SIGKILL");
    }
    const first = pagesOf("resumed");
    expect(first.length).toBeLessThan(MEMBER_PAGES.length);
    const resumed = await runCli("crawl", args, { env: ENV, timeoutMs: 150_000 });
    expect(resumed.code, resumed.stderr.slice(-2000)).toBe(0);
    expect(pagesOf("resumed")).toEqual([...MEMBER_PAGES].sort());
    expect(loginPagesIn("resumed")).toEqual([]);
  }, 240_000);
});

/** A profile made as browsertrix-crawler makes one: Chromium on a user-data folder, cookies kept --cookieDays, `tar cvfz ./`. */
async function browsertrixStyleProfile(file: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "btx-profile-"));
  try {
    const browser = await puppeteer.launch({
      executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, userDataDir: dir,
      // browsertrix-crawler's defaultArgs store cookies the same way.
      args: [...BROWSER_ARGS, "--password-store=basic", "--use-mock-keychain"],
    });
    try {
      const page = await browser.newPage();
      await page.goto(site.loginUrl);
      await page.type("#username", USER);
      await page.type("#password", PASSWORD);
      await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
      expect(await page.title()).toBe("Members /members/");
      const cdp = await browser.target().createCDPSession();
      const { cookies } = await cdp.send("Storage.getCookies");
      const expires = Date.now() / 1000 + 7 * 86400;
      await cdp.send("Storage.setCookies", { cookies: cookies.map(({ name, value, domain, path, secure, httpOnly }) => ({ name, value, domain, path, secure, httpOnly, expires })) });
    } finally {
      await closeBrowser(browser);
    }
    // The lock a browser that did not close cleanly leaves behind: a symlink, never unpacked.
    symlinkSync("somehost-1234", join(dir, "SingletonLock"));
    execFileSync("tar", ["cvfz", file, "./"], { cwd: dir, stdio: "ignore" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.concurrent("a browsertrix-crawler profile", () => {
  it("made with its layout and served over HTTP, loads", async () => {
    const file = join(cwd, "btx-profile.tar.gz");
    await browsertrixStyleProfile(file);
    const names = execFileSync("tar", ["tzf", file], { encoding: "utf8" }).split("\n");
    expect(names).toContain("./Default/Cookies");
    expect(names).toContain("./SingletonLock");
    const server: Server = createServer((req, res) => {
      if (req.url !== "/profiles/btx.tar.gz") return void res.writeHead(404).end();
      res.writeHead(200, { "content-type": "application/gzip" });
      res.end(readFileSync(file));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/profiles/btx.tar.gz`;
      const result = await crawl("btx", ["--loadProfile", url]);
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
      expect(pagesOf("btx")).toEqual([...MEMBER_PAGES].sort());
    } finally {
      server.closeAllConnections();
      server.close();
    }
  }, 180_000);
});

describe("a profile in the upload storage", () => {
  it("--profile @name is read from STORE_ENDPOINT_URL + STORE_PATH, as the Browsertrix service passes it", async () => {
    // The members crawl (above) had its profile from there.
    const result = await crawlMembers();
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(pagesOf("members")).toEqual([...MEMBER_PAGES].sort());
    const missing = await crawl("from-store-missing", ["--profile", "@profiles/nothing.tar.gz"], storeEnv);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toContain("crawl: --profile @profiles/nothing.tar.gz cannot be fetched from the upload storage");
  }, 180_000);
});

describe("an expired session", () => {
  it("a page sent to the login page is reported, not archived; with --failOnContentCheck the crawl fails", async () => {
    site.expireSessions();
    // Two independent runs: at once.
    const [result, failing] = await Promise.all([crawl("expired", ["--profile", profile]), crawl("expired-check", ["--profile", profile, "--failOnContentCheck"])]);
    // The seed was the only page: no page could be crawled.
    expect(result.code, result.stderr.slice(-2000)).toBe(9);
    expect(result.stderr).toContain("page not archived: it redirected to the login page");
    const responses = ofType(recordsOf("expired"), "response").map((r) => pathOf(targetOf(r)));
    expect(responses.filter((p) => p.startsWith("/login"))).toEqual([]);
    expect(responses).not.toContain("/members/");

    expect(failing.code, failing.stderr.slice(-2000)).toBe(9);
    expect(failing.stderr).toMatch(/content check failed on http:\/\/127\.0\.0\.1:\d+\/members\/: logged out: redirected to the login page/);
  });
});


const until = async (check: () => boolean, what: string, ms = 30_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

function statusOfGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("create-login-profile, interactive, and --profile", () => {
  it("is driven through its page in a real browser: click and type into the streamed form, save, crawl; --profile: it starts from an existing profile and saves it extended", async () => {
    // The existing profile: the automated one, with a file of an earlier login added and its cookies taken
    // out (so that the cookie the crawl below logs in with is the one typed into the interactive page).
    const base = join(cwd, "base");
    execFileSync("mkdir", ["-p", join(base, "Default")]);
    execFileSync("tar", ["xzf", profile, "-C", base]);
    execFileSync("sh", ["-c", "echo kept > Default/earlier-login-marker && rm -f Default/Cookies Default/Cookies-journal"], { cwd: base });
    const baseFile = join(cwd, "base.tar.gz");
    execFileSync("tar", ["czf", baseFile, "./"], { cwd: base });
    expect(await listProfile(baseFile)).not.toContain("./Default/Cookies");

    const file = join(cwd, "interactive", "profile.tar.gz");
    const logins = site.logins;
    const child = spawn(process.execPath, ["dist/src/cli/createLoginProfile.js", "--url", site.loginUrl, "--port", "0", "--filename", file, "--profile", baseFile], { cwd: ROOT, env: { ...process.env, ...ENV } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const profileDir = mkdtempSync(join(tmpdir(), "interactive-driver-"));
    let driver: import("puppeteer-core").Browser | null = null;
    try {
      await until(() => /Open (http:\S+)/.test(stdout), "the page's address");
      const pageUrl = /Open (http:\S+)/.exec(stdout)![1];
      const base = new URL(pageUrl);
      expect(base.hostname).toBe("127.0.0.1");
      const token = base.searchParams.get("token")!;
      expect(token.length).toBeGreaterThanOrEqual(32);
      for (const path of ["/", "/stream", "/ping", "/save", "/?token=wrong" + token.slice(5), "/etc/passwd"]) expect(await statusOfGet(base.origin + path), path).toBe(403);
      expect(await statusOfGet(`${base.origin}/other?token=${token}`)).toBe(404);

      driver = await puppeteer.launch({ executablePath: process.env.BROWSER_BIN ?? "/usr/bin/chromium", headless: true, userDataDir: profileDir, args: [...BROWSER_ARGS] });
      const page = await driver.newPage();
      await page.setViewport({ width: 1000, height: 800 });
      await page.goto(pageUrl);
      await page.waitForFunction(() => (document.getElementById("address") as HTMLInputElement).value.endsWith("/login"), { timeout: 30_000 });
      await page.waitForFunction(() => {
        const img = document.getElementById("screen") as HTMLImageElement;
        return !img.hidden && img.complete && img.naturalWidth > 0 && Number(img.dataset.width) > 0;
      }, { timeout: 30_000 });
      await new Promise((r) => setTimeout(r, 1000));
      const clickAt = async (b: { x: number; y: number; width: number; height: number }) => {
        const at = await page.$eval("#screen", (el) => {
          const r = el.getBoundingClientRect();
          return { left: r.left, top: r.top, sx: r.width / Number((el as HTMLElement).dataset.width), sy: r.height / Number((el as HTMLElement).dataset.height) };
        });
        await page.mouse.click(at.left + (b.x + b.width / 2) * at.sx, at.top + (b.y + b.height / 2) * at.sy);
      };
      await clickAt(FIELD_BOXES.username);
      await page.keyboard.type(USER);
      await clickAt(FIELD_BOXES.password);
      await page.keyboard.type(PASSWORD);
      await clickAt(FIELD_BOXES.submit);
      await until(() => site.logins === logins + 1, "the login through the interactive page");
      await page.waitForFunction(() => (document.getElementById("address") as HTMLInputElement).value.endsWith("/members/"), { timeout: 30_000 });
      await page.click("#save");
      await page.waitForFunction(() => document.getElementById("status")!.textContent!.startsWith("Profile saved"), { timeout: 60_000 });
      expect(await exited, stderr.slice(-2000)).toBe(0);
    } finally {
      if (driver) await closeBrowser(driver);
      rmSync(profileDir, { recursive: true, force: true });
      child.kill("SIGKILL");
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(stdout + stderr).not.toContain(site.lastSession!);
    expect(await listProfile(file)).toEqual(expect.arrayContaining(["./Default/earlier-login-marker", "./Default/Cookies"]));
    const result = await crawl("interactive", ["--profile", file]);
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(pagesOf("interactive")).toEqual([...MEMBER_PAGES].sort());
  }, 240_000);
});
