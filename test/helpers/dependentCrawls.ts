/**
 * Three crawls of one loopback site into one dedupe index, each in its own collection, each later one depending
 * on the ones before: what `replay`, `qa` and the export are tested on.
 *
 *   crawl one:   /            /a.html (red.png, green.png)
 *   crawl two:   / (changed)  /a.html  /b.html (blue.png: new)
 *   crawl three: / (changed)  /a.html  /b.html  /c.html (sky.png: blue.png's bytes at another URL)
 *
 * Pages change between crawls (their HTML is a response each time); images do not, so crawl two revisits crawl
 * one's images, and crawl three revisits crawl one's and crawl two's (sky.png resolves to blue.png's response).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { PNG } from "pngjs";
import { runCli, NO_BEHAVIORS, type CliResult } from "./cli.js";
import { seededRandom } from "./seededRandom.js";

/** A PNG of noise in one hue: big enough to be deduplicated (over 512 bytes), distinct per seed. */
function noisePng(seed: number, hue: [number, number, number]): Buffer {
  const random = seededRandom(seed);
  const png = new PNG({ width: 40, height: 30 });
  for (let i = 0; i < png.data.length; i += 4) {
    const shade = 0.6 + 0.4 * random();
    png.data[i] = Math.round(hue[0] * shade);
    png.data[i + 1] = Math.round(hue[1] * shade);
    png.data[i + 2] = Math.round(hue[2] * shade);
    png.data[i + 3] = 255;
  }
  return PNG.sync.write(png);
}

export const IMAGES = {
  "/red.png": noisePng(1, [230, 30, 30]),
  "/green.png": noisePng(2, [30, 200, 30]),
  "/blue.png": noisePng(3, [30, 30, 230]),
} as const;

const page = (title: string, body: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1>${body}</body></html>`;

/** The site as it is at crawl `version` (1, 2 or 3). */
function siteAt(version: number): Map<string, { type: string; body: Buffer }> {
  const html = (title: string, body: string) => ({ type: "text/html; charset=utf-8", body: Buffer.from(page(title, body)) });
  const png = (bytes: Buffer) => ({ type: "image/png", body: bytes });
  const links = ["a.html", ...(version >= 2 ? ["b.html"] : []), ...(version >= 3 ? ["c.html"] : [])].map((p) => `<a href="/${p}">${p}</a>`).join(" ");
  const files = new Map<string, { type: string; body: Buffer }>([
    ["/", html(`Home, version ${version}`, `<p>links: ${links}</p>`)],
    ["/a.html", html(`Page A, crawl ${version}`, `<img src="/red.png" width="40" height="30"><img src="/green.png" width="40" height="30">`)],
    ["/red.png", png(IMAGES["/red.png"])],
    ["/green.png", png(IMAGES["/green.png"])],
  ]);
  if (version >= 2) {
    files.set("/b.html", html(`Page B, crawl ${version}`, `<img src="/blue.png" width="40" height="30">`));
    files.set("/blue.png", png(IMAGES["/blue.png"]));
  }
  if (version >= 3) {
    files.set("/c.html", html(`Page C, crawl ${version}`, `<img src="/sky.png" width="40" height="30"><img src="/red.png" width="40" height="30">`));
    files.set("/sky.png", png(IMAGES["/blue.png"]));
  }
  return files;
}

export interface DependentSite {
  url: string;
  /** Serve the site as it is at crawl `version`. */
  setVersion(version: number): void;
  close(): Promise<void>;
}

export async function startDependentSite(): Promise<DependentSite> {
  let files = siteAt(1);
  const server: Server = createServer((req, res) => {
    const file = files.get(new URL(req.url ?? "/", "http://x").pathname);
    if (!file) return void res.writeHead(404, { "Content-Type": "text/plain" }).end("not found");
    res.writeHead(200, { "Content-Type": file.type, "Content-Length": file.body.length, "Cache-Control": "no-store" }).end(file.body);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setVersion: (version) => void (files = siteAt(version)),
    close: () => new Promise<void>((done) => { server.closeAllConnections(); server.close(() => done()); }),
  };
}

/** The collection names of the three crawls, in crawl order. */
export const DEPENDENT_COLLECTIONS = ["one", "two", "three"] as const;

/** The pages each crawl lists, as paths. */
export const PAGES_OF = { one: ["/", "/a.html"], two: ["/", "/a.html", "/b.html"], three: ["/", "/a.html", "/b.html", "/c.html"] } as const;

/** Run the three crawls into `cwd` (collections one, two, three), deduplicating against `redisUrl`: their results, in order. */
export async function crawlDependentSet(site: DependentSite, cwd: string, redisUrl: string, extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<CliResult[]> {
  const results: CliResult[] = [];
  for (const [i, name] of DEPENDENT_COLLECTIONS.entries()) {
    site.setVersion(i + 1);
    const result = await runCli("crawl", [
      "--url", `${site.url}/`, "--collection", name, "--cwd", cwd, ...NO_BEHAVIORS, "--generateWACZ", "--text", "to-pages",
      "--redisStoreUrl", redisUrl, "--redisDedupeUrl", redisUrl, "--workers", "2", ...extra,
    ], { env });
    if (result.code !== 0) throw new Error(`crawl ${name} failed (exit ${result.code}): ${result.stderr.slice(-1500)}`);
    results.push(result);
  }
  return results;
}

export const waczPathOf = (cwd: string, name: string): string => join(cwd, "collections", name, `${name}.wacz`);
