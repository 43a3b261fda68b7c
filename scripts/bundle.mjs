// Bundles the programs of package.json "bin" (crawl, indexer, history, create-login-profile, qa, replay), each in place of
// what tsc emitted for it, with what they share in dist/chunks/: node then reads a few files instead of some 700
// modules of the crawler and its libraries, a cost every crawler process of a multi-process crawl and every
// indexer run pays at start. The other files tsc wrote stay as they were (tests and benchmarks import them).
// Run by `npm run build`, after tsc (which type-checks; esbuild only strips the types).
import { readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bins = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).bin;

// Loaded only when a run needs them (uploads, media manifests, profiles, proxies), through import(): they stay
// in node_modules, read from there on first use, and keep the bundles small.
const LOADED_ON_DEMAND = ["@aws-sdk/*", "@webrecorder/wabac", "tar", "m3u8-parser", "mpd-parser", "proxy-chain", "fetch-socks"];
// Optional native speedups some libraries try to load and do without.
const OPTIONAL_NATIVE = ["bufferutil", "utf-8-validate"];
// CommonJS libraries in an ES module bundle still ask for require, __filename and __dirname.
const BANNER = [
  'import { createRequire as __bundleCreateRequire } from "node:module";',
  'import { fileURLToPath as __bundleFileURLToPath } from "node:url";',
  'import { dirname as __bundleDirname } from "node:path";',
  "const require = __bundleCreateRequire(import.meta.url);",
  "const __filename = __bundleFileURLToPath(import.meta.url);",
  "const __dirname = __bundleDirname(__filename);",
].join("\n");

// puppeteer-core's `debug` is scripts/cachedDebug.mjs: a logger per namespace made once, not once per protocol message.
const CACHED_DEBUG = join(root, "scripts", "cachedDebug.mjs");
const cachedDebugForPuppeteer = {
  name: "cached-debug-for-puppeteer",
  setup(bundler) {
    bundler.onResolve({ filter: /^debug$/ }, (args) => (args.importer.includes("/puppeteer-core/") ? { path: CACHED_DEBUG } : undefined));
  },
};

// dist/src/cli/crawl.js is built from src/cli/crawl.ts, dist/indexer/cli.js from indexer/cli.ts.
const sourceOf = (out) => out.replace(/^dist\//, "").replace(/\.js$/, ".ts");
for (const out of Object.values(bins)) statSync(join(root, sourceOf(out)));
// One build for all programs: what they share goes into dist/chunks/ once, and what a program loads on demand
// (import()) into chunks of its own, read only when it is needed.
const result = await build({
  entryPoints: Object.values(bins).map((out) => join(root, sourceOf(out))),
  outbase: root,
  outdir: join(root, "dist"),
  chunkNames: "chunks/[name]-[hash]",
  allowOverwrite: true,
  bundle: true,
  splitting: true,
  platform: "node",
  format: "esm",
  target: "node20",
  external: [...LOADED_ON_DEMAND, ...OPTIONAL_NATIVE],
  banner: { js: BANNER },
  plugins: [cachedDebugForPuppeteer],
  sourcemap: "linked",
  sourcesContent: false,
  metafile: true,
  logLevel: "warning",
});
// Each program runs its main only when it is the script node was given (import.meta.url): its own module must
// stay in its entry file, not move into a chunk shared with a program that imports it.
for (const [name, out] of Object.entries(bins)) {
  const output = result.metafile.outputs[relative(process.cwd(), join(root, out))];
  const own = relative(process.cwd(), join(root, sourceOf(out)));
  if (!output || !(own in output.inputs)) throw new Error(`${name}: ${sourceOf(out)} is imported by another program: move what that one needs out of it`);
}
