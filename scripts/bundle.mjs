// Bundles each program of package.json "bin" (crawl, indexer, history, create-login-profile, qa) into one file, in
// place of what tsc emitted for it: node then reads one file instead of some 700 modules of the crawler and its
// libraries, which halves the CPU each process spends starting (every crawler process of a multi-process crawl,
// every indexer run). The other files tsc wrote stay as they were (tests and benchmarks import them).
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

for (const [name, out] of Object.entries(bins)) {
  // dist/src/cli/crawl.js is built from src/cli/crawl.ts, dist/indexer/cli.js from indexer/cli.ts.
  const source = join(root, out.replace(/^dist\//, "").replace(/\.js$/, ".ts"));
  statSync(source);
  const result = await build({
    entryPoints: [source],
    outfile: join(root, out),
    allowOverwrite: true,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    external: [...LOADED_ON_DEMAND, ...OPTIONAL_NATIVE],
    banner: { js: BANNER },
    sourcemap: "linked",
    sourcesContent: false,
    metafile: true,
    logLevel: "warning",
  });
  // A program that imports another's entry would run that one's main too (each checks that it is the script run).
  const otherEntries = Object.values(bins)
    .filter((o) => o !== out)
    .map((o) => relative(root, join(root, o.replace(/^dist\//, "").replace(/\.js$/, ".ts"))));
  const inputs = Object.keys(result.metafile.inputs).map((i) => relative(root, join(root, i)));
  const imported = otherEntries.filter((e) => inputs.includes(e));
  if (imported.length) throw new Error(`${name} imports the entry of another program (${imported.join(", ")}): move what it needs out of that file`);
}
