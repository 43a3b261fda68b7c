/**
 * A deduplicated crawl exported with every WACZ it needs, as one file, replayed in ReplayWeb.page from that file
 * alone: three crawls of one site, crawl three revisiting the images of crawls one and two (/c.html's sky.png is
 * crawl two's blue.png at another URL). Every page of crawl three must show crawl three's capture with every image
 * loaded: the set's members with plain CDXJ indexes (as crawled) and with ZipNum indexes of one line a block (how
 * a large crawl's index looks to ReplayWeb.page, which then loads it block by block). The zip of WACZ files
 * Browsertrix writes misses originals: the last test shows one, the reason the export is one WACZ.
 */
import { createHash } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportWaczSet } from "../../../src/replay/exportSet.js";
import { resolveWaczSet } from "../../../src/replay/resolveSet.js";
import { crawlDependentSet, DEPENDENT_COLLECTIONS, startDependentSite, waczPathOf, type DependentSite } from "../../helpers/dependentCrawls.js";
import { writeNestedPackage } from "../../helpers/nestedPackage.js";
import { runCli } from "../../helpers/cli.js";
import { startTestRedis } from "../../helpers/redis.js";
import { detectReplayFailure, replayPage, startReplayServer, type ReplayPageResult, type ReplayServer } from "../../helpers/replay.js";
import { readZip } from "../../helpers/zip.js";
import { rewriteWithZipNum } from "../../helpers/zipNumSet.js";

/** Crawl three's pages: the title each shows at crawl three, and its images (archived paths). */
const CRAWL_THREE = [
  { path: "/", title: "Home, version 3", images: [] },
  { path: "/a.html", title: "Page A, crawl 3", images: ["/red.png", "/green.png"] },
  { path: "/b.html", title: "Page B, crawl 3", images: ["/blue.png"] },
  { path: "/c.html", title: "Page C, crawl 3", images: ["/sky.png", "/red.png"] },
] as const;

let dir: string;
let site: DependentSite;
/** Crawl three's page URLs and their timestamps (YYYYMMDDhhmmss), from its WACZ's page lists. */
const crawlThreeTs = new Map<string, string>();
/** Folders served on their own: each holds nothing but what a test put in it. */
let plainAlone: string;
let zipNumAlone: string;
let nestedAlone: string;
/** What `replay --export` printed. */
let exportLine: string;
const servers: ReplayServer[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "export-e2e-"));
  const redis = await startTestRedis();
  site = await startDependentSite();
  try {
    await crawlDependentSet(site, dir, redis.url);
  } finally {
    await redis.stop();
    // Nothing is fetched live: the site is gone before any replay.
    await site.close();
  }
  const three = await readZip(waczPathOf(dir, "three"));
  for (const list of ["pages/pages.jsonl", "pages/extraPages.jsonl"]) {
    for (const line of three.get(list)?.data.toString().split("\n").filter(Boolean) ?? []) {
      const entry = JSON.parse(line) as { url?: string; ts?: string };
      if (entry.url && entry.ts) crawlThreeTs.set(new URL(entry.url).pathname, entry.ts.replace(/\D/g, "").slice(0, 14));
    }
  }

  // The set as crawled (plain CDXJ indexes), exported, then copied alone into an empty folder.
  const plainSet = await resolveWaczSet([waczPathOf(dir, "three")], { cwd: dir, from: [], store: null });
  plainAlone = join(dir, "plain-alone");
  await mkdir(plainAlone);
  // Exported by the program, as a user exports it.
  const exported = await runCli("replay", ["--export", join(dir, "set.wacz"), waczPathOf(dir, "three")]);
  if (exported.code !== 0) throw new Error(`replay --export failed (${exported.code}): ${exported.stderr}`);
  exportLine = exported.stdout;
  await copyFile(join(dir, "set.wacz"), join(plainAlone, "set.wacz"));
  // The JSON manifest beside the collections it points into.
  await exportWaczSet(plainSet, join(dir, "set.json"));
  nestedAlone = join(dir, "nested-alone");
  await mkdir(nestedAlone);
  await writeNestedPackage(plainSet.members, join(nestedAlone, "set.wacz"));
  await plainSet.dispose();

  // The same crawls with ZipNum indexes of one line a block.
  const zipNumDir = join(dir, "zipnum");
  await mkdir(zipNumDir);
  await rewriteWithZipNum(DEPENDENT_COLLECTIONS.map((name) => waczPathOf(dir, name)), zipNumDir, 1);
  const zipNumSet = await resolveWaczSet([join(zipNumDir, "three.wacz")], { cwd: zipNumDir, from: [], store: null });
  zipNumAlone = join(dir, "zipnum-alone");
  await mkdir(zipNumAlone);
  await exportWaczSet(zipNumSet, join(zipNumAlone, "set.wacz"));
  await zipNumSet.dispose();
}, 120_000);

afterAll(async () => {
  for (const server of servers) await server.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function serve(folder: string): Promise<ReplayServer> {
  const server = await startReplayServer(folder);
  servers.push(server);
  return server;
}

/** Replay `url` (default: the page itself) from `source` at the time crawl three captured `page`. */
function replayCrawlThree(server: ReplayServer, source: string, page: string, url = page): Promise<ReplayPageResult> {
  const ts = crawlThreeTs.get(page);
  if (!ts) throw new Error(`crawl three lists no page ${page}`);
  return replayPage(server, { source, url: `${site.url}${url}`, ts, waitForImages: true, timeoutMs: 45_000 });
}

/** What a replayed page shows: its title, and each image by archived path with its decoded width (0: not loaded). */
function shown(result: ReplayPageResult): { title: string; images: [string, number][] } {
  return {
    title: result.title,
    images: result.images.map((img) => [new URL(/(?:im_|mp_)\/(https?:.*)$/.exec(img.src)?.[1] ?? img.src).pathname, img.naturalWidth]),
  };
}

const sha256 = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** Every image of the site is a 40x30 PNG. */
const whole = (page: (typeof CRAWL_THREE)[number]) => ({ title: page.title, images: page.images.map((path) => [path, 40]) });

describe("a deduplicated crawl exported with its dependencies", () => {
  it("is a crawl whose images are revisits of crawls one and two, one of them at another URL", async () => {
    expect(DEPENDENT_COLLECTIONS).toEqual(["one", "two", "three"]);
    expect([...crawlThreeTs.keys()].sort()).toEqual(CRAWL_THREE.map((p) => p.path).sort());
    const index = (await readZip(waczPathOf(dir, "three"))).get("indexes/index.cdxj")!.data.toString();
    const mimeOf = (path: string) => (JSON.parse(index.split("\n").find((line) => line.includes(`"url":"${site.url}${path}"`))!.replace(/^\S+ \S+ /, "")) as { mime: string }).mime;
    expect(["/red.png", "/green.png", "/blue.png", "/sky.png"].map(mimeOf)).toEqual(Array(4).fill("warc/revisit"));
  });

  it("as one WACZ, replays every page of crawl three with every image, from that file alone", async () => {
    const bytes = await readFile(join(plainAlone, "set.wacz"));
    expect(exportLine).toBe(`replay: wrote ${join(dir, "set.wacz")} (sha256:${createHash("sha256").update(bytes).digest("hex")}, ${bytes.length} bytes), one WACZ holding 3 WACZ files: one.wacz, two.wacz, three.wacz\n`);
    expect(await readdir(plainAlone)).toEqual(["set.wacz"]);
    const server = await serve(plainAlone);
    for (const page of CRAWL_THREE) {
      const result = await replayCrawlThree(server, "/archives/set.wacz", page.path);
      expect(detectReplayFailure(result.text), page.path).toBeNull();
      expect(shown(result), `${page.path}; service worker: ${result.serviceWorkerConsole.join(" | ")}`).toEqual(whole(page));
    }
    // A revisit opened as a page: crawl three's sky.png, crawl two's blue.png at another URL.
    const sky = await replayCrawlThree(server, "/archives/set.wacz", "/c.html", "/sky.png");
    expect(shown(sky)).toEqual({ title: "sky.png (40×30)", images: [["/sky.png", 40]] });
  });

  it("as one WACZ made from members with ZipNum indexes, holds what the plain members make and replays /a.html whole", async () => {
    expect(await readdir(zipNumAlone)).toEqual(["set.wacz"]);
    // The members' index format does not reach the export: the same WARC files, one index made from them, the same pages.
    const entriesOf = async (path: string) =>
      [...(await readZip(path))].filter(([name]) => !name.startsWith("datapackage")).map(([name, { data }]) => [name, sha256(data)]);
    expect(await entriesOf(join(zipNumAlone, "set.wacz"))).toEqual(await entriesOf(join(plainAlone, "set.wacz")));
    const server = await serve(zipNumAlone);
    const page = CRAWL_THREE[1];
    const result = await replayCrawlThree(server, "/archives/set.wacz", page.path);
    expect(shown(result), `service worker: ${result.serviceWorkerConsole.join(" | ")}`).toEqual(whole(page));
  });

  it("as a JSON manifest, replays /c.html with every image from the collections it points into", async () => {
    const server = await serve(dir);
    const page = CRAWL_THREE[3];
    const result = await replayCrawlThree(server, "/archives/set.json", page.path);
    expect(shown(result)).toEqual(whole(page));
  });

  it("as Browsertrix's zip of WACZ files, misses the original of crawl three's sky.png opened as a page", async () => {
    const server = await serve(nestedAlone);
    const result = await replayCrawlThree(server, "/archives/set.wacz", "/c.html", "/sky.png");
    expect(detectReplayFailure(result.text)).toBe("Original Archived Page Missing");
    // The package's WACZ files are "default#!/<name>" to ReplayWeb.page, so the revisit's "two.wacz" is none of them:
    // it searches the files by name, and stops at three.wacz's revisit before it has loaded two.wacz's index.
    expect(result.serviceWorkerConsole.filter((line) => line.startsWith("log: Loading CDX"))).toEqual([
      "log: Loading CDX for default#!/one.wacz",
      "log: Loading CDX for default#!/three.wacz",
    ]);
  });
});
