// The folder layout is the architecture: these rules keep it readable as the code grows.
// Imports are read from the sources (type-only imports count: they tie modules together all the same).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");
// Files are split by meaning, not by length: a cohesive 550-line file reads better than two halves of one idea.
const MAX_LINES = 600;
const MAX_FOLDER_FILES = 20;

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(join(ROOT, dir))) {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) files.push(...sourceFiles(path));
    else if (name.endsWith(".ts")) files.push(path);
  }
  return files;
}

/** Each file's imports of our own modules, as paths from the project root. */
function importGraph(files: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const pattern = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']|(?:^|\n)\s*import\s*["'](\.{1,2}\/[^"']+)["']/g;
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), "utf8");
    const targets = new Set<string>();
    for (const match of text.matchAll(pattern)) {
      const spec = (match[1] ?? match[2])!.replace(/\.js$/, ".ts");
      const target = relative(ROOT, resolve(ROOT, dirname(file), spec));
      expect(existsSync(join(ROOT, target)), `${file} imports ${spec}, which does not exist`).toBe(true);
      targets.add(target);
    }
    graph.set(file, [...targets]);
  }
  return graph;
}

/** The folder a file belongs to: src/<folder> (subfolders count as their folder), else its own directory. */
function folderOf(file: string): string {
  const parts = dirname(file).split("/");
  return parts[0] === "src" ? parts.slice(0, 2).join("/") : dirname(file);
}

/** Every cycle of a directed graph, each once, as the list of its nodes. */
function cycles(edges: Map<string, Set<string>>): string[][] {
  const found: string[][] = [];
  const seen = new Set<string>();
  const nodes = [...edges.keys()].sort();
  for (const start of nodes) {
    // Cycles through `start` whose other nodes all sort after it: each cycle is reported from its smallest node.
    const stack: [string, string[]][] = [[start, [start]]];
    while (stack.length) {
      const [node, path] = stack.pop()!;
      for (const next of edges.get(node) ?? []) {
        if (next === start) {
          const key = path.join(" -> ");
          if (!seen.has(key)) found.push([...path, start]);
          seen.add(key);
        } else if (next > start && !path.includes(next)) {
          stack.push([next, [...path, next]]);
        }
      }
    }
  }
  return found;
}

const files = [...sourceFiles("src"), ...sourceFiles("indexer")];
/** The one module that reads the test variables and builds the test seams. */
const SEAMS = "src/util/testSeams.ts";
const graph = importGraph(files);

function importsOf(prefix: string): { from: string; to: string }[] {
  return [...graph].filter(([file]) => file.startsWith(prefix)).flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
}

/** Folders holding source files: each is described by its README.md. */
const folders = [...new Set(files.map((f) => dirname(f)))].sort();

/** A README's `Label:` line's backticked paths, as paths from the root (`log/` means `src/log/`). */
function readmePaths(folder: string, label: string): string[] | null {
  const text = readFileSync(join(ROOT, folder, "README.md"), "utf8");
  const line = text.split("\n").find((l) => l.replace(/^[-*\s]+/, "").replace(/\*\*/g, "").startsWith(`${label}:`));
  if (line === undefined) return null;
  return [...line.matchAll(/`([^`]+)`/g)].map((m) => (/^(src|indexer)\//.test(m[1]!) ? m[1]! : `src/${m[1]!}`));
}

describe("architecture", () => {
  it("no import cycle between files", () => {
    const edges = new Map([...graph].map(([file, targets]) => [file, new Set(targets)]));
    expect(cycles(edges).map((c) => c.join(" -> "))).toEqual([]);
  });

  it("no import cycle between folders", () => {
    const edges = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = folderOf(file);
      if (!edges.has(from)) edges.set(from, new Set());
      for (const target of targets) if (folderOf(target) !== from) edges.get(from)!.add(folderOf(target));
    }
    expect(edges.size).toBeGreaterThan(10);
    expect(cycles(edges).map((c) => c.join(" -> "))).toEqual([]);
  });

  it(`no file in src/ or indexer/ is over ${MAX_LINES} lines`, () => {
    const long = files.map((f) => ({ file: f, lines: readFileSync(join(ROOT, f), "utf8").split("\n").length }));
    expect(long.filter((f) => f.lines > MAX_LINES)).toEqual([]);
  });

  it(`no folder holds more than ${MAX_FOLDER_FILES} source files: a larger one is split by what its files do`, () => {
    const large = folders.map((folder) => ({ folder, files: files.filter((f) => dirname(f) === folder).length })).filter((f) => f.files > MAX_FOLDER_FILES);
    expect(large).toEqual([]);
  });

  it("file names say what they hold: no two source files of one name (index.ts, a folder's public surface, aside), no btx prefix", () => {
    const byName = new Map<string, string[]>();
    for (const file of files) byName.set(basename(file), [...(byName.get(basename(file)) ?? []), file]);
    const twice = [...byName].filter(([name, paths]) => name !== "index.ts" && paths.length > 1);
    expect(twice).toEqual([]);
    expect(files.filter((f) => /^btx/i.test(basename(f)))).toEqual([]);
  });

  it("every folder of src/ and indexer/ has a README.md saying what it holds, its entry point, what it may and must not import", () => {
    const problems: string[] = [];
    for (const folder of folders) {
      if (!existsSync(join(ROOT, folder, "README.md"))) {
        problems.push(`${folder}/README.md is missing`);
        continue;
      }
      // Entry points are files (`crawler.ts`); the other backticked words of the line name what they export.
      const entry = readmePaths(folder, "Entry point")?.filter((path) => path.endsWith(".ts"));
      if (!entry?.length) problems.push(`${folder}/README.md has no "Entry point:" line naming a file`);
      // Named by file name (`crawler.ts`) or by path.
      for (const path of entry ?? []) {
        const file = existsSync(join(ROOT, folder, basename(path))) ? join(folder, basename(path)) : path;
        if (!existsSync(join(ROOT, file))) problems.push(`${folder}/README.md names an entry point that does not exist: ${path}`);
      }
      if (readmePaths(folder, "May import") === null) problems.push(`${folder}/README.md has no "May import:" line`);
      if (readmePaths(folder, "Must not import") === null) problems.push(`${folder}/README.md has no "Must not import:" line`);
    }
    expect(problems).toEqual([]);
  });

  it("every folder imports only what its README.md says it may (its own subfolders always)", () => {
    const problems: string[] = [];
    for (const folder of folders) {
      if (!existsSync(join(ROOT, folder, "README.md"))) continue;
      const allowed = readmePaths(folder, "May import") ?? [];
      for (const [file, targets] of graph) {
        if (dirname(file) !== folder) continue;
        for (const target of targets) {
          if (target.startsWith(`${folder}/`)) continue;
          if (!allowed.some((a) => (a.endsWith("/") ? target.startsWith(a) : target === a))) problems.push(`${file} imports ${target}: not in ${folder}/README.md's "May import:"`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it("archive/ is a WARC library: it imports nothing of ours outside itself but durable/, which imports nothing", () => {
    expect(importsOf("src/archive/").filter(({ to }) => !to.startsWith("src/archive/") && !to.startsWith("src/durable/"))).toEqual([]);
    expect(importsOf("src/durable/").filter(({ to }) => !to.startsWith("src/durable/"))).toEqual([]);
  });

  it("dedupe/ decides and keeps the index: it writes no records (of archive/ it uses the WARC dates only) and knows nothing of the browser, the pipeline or the crawl", () => {
    const upward = ["src/archive/", "src/pipeline/", "src/browser/", "src/capture/", "src/page/", "src/behaviors/", "src/crawl/", "src/fetch/"];
    expect(importsOf("src/dedupe/").filter(({ to }) => to !== "src/archive/warcDate.ts" && !to.startsWith("src/durable/") && upward.some((p) => to.startsWith(p)))).toEqual([]);
  });

  it("src/ never imports the indexer; the WACZ writer and reader (src/wacz/) never import Redis-side code", () => {
    expect(importsOf("src/").filter(({ to }) => !to.startsWith("src/"))).toEqual([]);
    const redisSide = ["src/state/", "src/dedupe/", "src/redis/", "src/pipeline/", "src/crawl/"];
    expect(importsOf("src/wacz/").filter(({ to }) => redisSide.some((p) => to.startsWith(p)))).toEqual([]);
  });

  it("indexer/ uses src/ only through its public surface: src/dedupe/index.ts, the WACZ reader's index.ts, the logger, the version and the test seams", () => {
    const surface = ["src/dedupe/index.ts", "src/wacz/reader/index.ts", "src/wacz/manifest.ts", "src/log/logger.ts", "src/log/progress.ts", "src/version.ts", SEAMS];
    expect(importsOf("indexer/").filter(({ to }) => to.startsWith("src/") && !surface.includes(to))).toEqual([]);
  });

  it("no test variable read outside the seam: only util/testSeams.ts names CRAWLER_TEST_*, and no folder's surface re-exports a seam", () => {
    expect(files.filter((f) => f !== SEAMS && readFileSync(join(ROOT, f), "utf8").includes("CRAWLER_TEST_"))).toEqual([]);
    const seamExports = /export\s*\{[^}]*\}\s*from\s*["'][./]*util\/testSeams\.js["']|export\s*\*\s*from\s*["'][./]*util\/testSeams\.js["']/;
    expect(files.filter((f) => seamExports.test(readFileSync(join(ROOT, f), "utf8")))).toEqual([]);
    expect(readFileSync(join(ROOT, "src/dedupe/index.ts"), "utf8")).not.toMatch(/pauseForTests|testSeams/);
  });

  it("capture/ turns what CDP hands over into exchanges: it knows nothing of the page's load, its behaviors or the crawl", () => {
    const upward = ["src/page/", "src/behaviors/", "src/crawl/", "src/reports/", "src/config/"];
    expect(importsOf("src/capture/").filter(({ to }) => upward.some((p) => to.startsWith(p)))).toEqual([]);
  });

  it("static/ reads what a document names without a browser: it knows nothing of the browser, the capture, the page or the crawl", () => {
    const browserSide = ["src/browser/", "src/capture/", "src/page/", "src/crawl/"];
    expect(importsOf("src/static/").filter(({ to }) => browserSide.some((p) => to.startsWith(p)))).toEqual([]);
    expect(files.filter((f) => f.startsWith("src/static/")).length).toBeGreaterThan(0);
  });

  it("the command line parses and hands over: cli/crawl.ts starts no proxy, fetches nothing, runs no crawl itself", () => {
    const handedOver = ["src/proxy/", "src/fetch/", "src/profile/", "src/qa/", "src/redis/", "src/state/"];
    const crawlCli = importsOf("src/cli/crawl.ts");
    expect(crawlCli.filter(({ to }) => handedOver.some((p) => to.startsWith(p)))).toEqual([]);
    expect(crawlCli.filter(({ to }) => to.startsWith("src/crawl/")).map(({ to }) => to)).toEqual(["src/crawl/crawlCommand.ts"]);
  });

  it("every byte archived from outside the browser is fetched in fetch/: the browser side has no HTTP client of its own", () => {
    const browserSide = ["src/browser/", "src/capture/", "src/page/", "src/behaviors/", "src/pipeline/"];
    const browser = files.filter((f) => browserSide.some((p) => f.startsWith(p)));
    expect(browser.length).toBeGreaterThan(30);
    // node:http's STATUS_CODES is a table, not a client: only its request functions count.
    const client = /from\s+["'](undici|node:https)["']|import\s*\{[^}]*\b(request|get|Agent)\b[^}]*\}\s*from\s+["']node:http["']|\bfetch\(/;
    const withClient = browser.filter((f) => client.test(readFileSync(join(ROOT, f), "utf8")));
    expect(withClient).toEqual([]);
  });

  it("tests mirror the code: unit tests under test/unit/<src folder>/, end-to-end tests under test/e2e/<feature>/, nothing else but test/helpers/", () => {
    const testFiles = sourceFiles("test").filter((f) => f.endsWith(".test.ts"));
    expect(testFiles.length).toBeGreaterThan(100);
    expect(testFiles.filter((f) => !/^test\/(unit|e2e)\/[^/]+\//.test(f))).toEqual([]);
    // A unit folder is named after the src/ (or indexer/, fixtures/) folder it tests; "project" holds the tests of the tree itself.
    const unitFolders = [...new Set(testFiles.filter((f) => f.startsWith("test/unit/")).map((f) => f.split("/")[2]!))];
    const known = (name: string) => name === "project" || name === "indexer" || name === "fixtures" || existsSync(join(ROOT, "src", name));
    expect(unitFolders.filter((name) => !known(name))).toEqual([]);
  });

  it("no process-wide setters: no `export let`, and no exported function assigns a module-level `let` (the run's collaborators are handed in)", () => {
    // Each allowed module says why it holds process-wide state that exported functions change.
    const allowed = new Map([
      // The logger's scrubber: secrets become known at several stages (flags, the embedded Redis password, the live view's token) and every line the process writes is scrubbed of them (log/README.md).
      ["src/log/secrets.ts", ["registerSecrets", "scrubSecrets", "forgetSecrets"]],
      // The proxies' ssh tunnels and relay: the process's own resources, started once before anything is fetched, stopped as the command ends.
      ["src/proxy/activeProxies.ts", ["startProxies", "stopProxies"]],
      // A memo of the installed uBlock Origin lists (the same for the whole process: no caller chooses it).
      ["src/block/adHosts.ts", ["loadAdHosts"]],
      // A warning said once per process.
      ["src/browser/deathSignal.ts", ["executableWithDeathSignal"]],
    ]);
    const found: string[] = [];
    for (const file of files.filter((f) => f.startsWith("src/"))) {
      const text = readFileSync(join(ROOT, file), "utf8");
      if (/^export let /m.test(text)) found.push(`${file}: export let`);
      const lets = [...text.matchAll(/^let (.+)/gm)].flatMap((m) => [...m[1]!.matchAll(/(?:^|,\s*)(\w+)\s*(?::[^=,]+)?=/g)].map((n) => n[1]!));
      if (!lets.length) continue;
      for (const fn of text.matchAll(/^export (?:async )?function\*? (\w+)[\s\S]*?\n}\n/gm)) {
        const body = fn[0].slice(fn[0].indexOf("{"));
        const assigned = lets.filter((name) => new RegExp(`(^|[^.\\w])${name}\\s*(=(?!=)|\\?\\?=|\\|\\|=|&&=|\\+=|-=|\\+\\+|--)`, "m").test(body));
        if (assigned.length && !allowed.get(file)?.includes(fn[1]!)) found.push(`${file}: ${fn[1]} assigns ${assigned.join(", ")}`);
      }
    }
    expect(found).toEqual([]);
  });

  it("options are data: config/groups/ imports from browser/, capture/ and page/ only modules with no run-time import", () => {
    const runtime = ["src/browser/", "src/capture/", "src/page/"];
    const targets = importsOf("src/config/groups/").filter(({ to }) => runtime.some((p) => to.startsWith(p)));
    expect(targets.length).toBeGreaterThan(0);
    const importsAtRunTime = (file: string) => [...readFileSync(join(ROOT, file), "utf8").matchAll(/^import (?!type )[^;]*?from\s*["']([^"']+)["']/gm)].map((m) => m[1]);
    expect(targets.filter(({ to }) => importsAtRunTime(to).length > 0).map(({ from, to }) => `${from} imports ${to}: ${importsAtRunTime(to).join(", ")}`)).toEqual([]);
  });

  it("one durable write: only durable/ syncs files (its append log and writeWholeFile); what writes a file it must not lose goes through it", () => {
    // The WACZ writer streams a zip whose caller validates it before renaming it into place: it syncs its own output.
    const allowed = ["src/wacz/storedZip.ts"];
    const syncing = files.filter((f) => !f.startsWith("src/durable/") && /\.datasync\(|\bf(data)?sync(Sync)?\(|\b(handle|fh|fileHandle)\.sync\(\)/.test(readFileSync(join(ROOT, f), "utf8")));
    expect(syncing.filter((f) => !allowed.includes(f))).toEqual([]);
  });

  it("one liveness identity: lease and claim holders are named and judged by ownership/ only", () => {
    // Who may judge a pid's liveness besides ownership/: records of processes this crawler launched itself (its
    // browsers, its embedded redis-server), kept in files of the collection rather than in shared state; the test seam
    // standing in for the pid namespace.
    const allowed = ["src/browser/runningBrowsers.ts", "src/redis/embedded.ts", "src/util/procfs.ts", "src/util/testSeams.ts"];
    const judging = files.filter((f) => !f.startsWith("src/ownership/") && /\bisPidAlive\(|\bprocessStartTime\(|\bpidNamespace\(|process\.kill\([^,)]+,\s*0\)/.test(readFileSync(join(ROOT, f), "utf8")));
    expect(judging.filter((f) => !allowed.includes(f))).toEqual([]);
    // No second way of naming a holder: host and pid joined into an id outside ownership/ is not a lease holder.
    const holderIds = files.filter((f) => !f.startsWith("src/ownership/") && /function\s+\w*(holderId|HolderId|processId|ProcessId)\s*\(/.test(readFileSync(join(ROOT, f), "utf8")));
    expect(holderIds).toEqual([]);
  });

  it("each concept has one folder holding its mechanism: nothing outside it defines that mechanism again", () => {
    // folder -> what only it defines (a class, or a Redis key of the state keys it alone writes)
    const concepts: Record<string, RegExp> = {
      "src/frontier/": /\bclass Frontier\b/,
      "src/politeness/": /\bclass HostPacing\b|\bfunction waitForHostTurn\b|\bfunction settleRateLimited\b|\.hostTurn\(/,
      "src/budgets/": /\bclass SeedBudgets\b|\bclass ByteTallySink\b/,
      "src/ownership/": /\bclass FencedLease\b|\bfunction newHolderId\b/,
      "src/durable/": /\bclass AppendLog\b|\bfunction writeWholeFile\b/,
    };
    for (const [folder, mechanism] of Object.entries(concepts)) {
      expect(existsSync(join(ROOT, folder, "README.md")), folder).toBe(true);
      const inside = files.filter((f) => f.startsWith(folder) && mechanism.test(readFileSync(join(ROOT, f), "utf8")));
      const outside = files.filter((f) => !f.startsWith(folder) && !f.startsWith("src/state/stateKeys.ts") && mechanism.test(readFileSync(join(ROOT, f), "utf8")));
      expect(inside.length, folder).toBeGreaterThan(0);
      expect(outside, folder).toEqual([]);
    }
  });

  it("one name, one meaning: no two source files define a function of the same name", () => {
    // main: each program's entry. escapeRegExp: log/ is a leaf that imports nothing of ours, so it keeps its own.
    const allowed = new Set(["main", "escapeRegExp"]);
    const definedIn = new Map<string, string[]>();
    for (const f of files) {
      for (const [, name] of readFileSync(join(ROOT, f), "utf8").matchAll(/^(?:export )?(?:async )?function\*? ?(\w+)/gm)) {
        definedIn.set(name!, [...(definedIn.get(name!) ?? []), f]);
      }
    }
    expect([...definedIn].filter(([name, where]) => where.length > 1 && !allowed.has(name))).toEqual([]);
  });

  it("runCrawl reads as the list of its stages (under 80 lines)", () => {
    const text = readFileSync(join(ROOT, "src/crawl/crawler.ts"), "utf8");
    const start = text.indexOf("export async function runCrawl(");
    expect(start).toBeGreaterThan(0);
    const end = text.indexOf("\n}\n", start);
    expect(text.slice(start, end).split("\n").length).toBeLessThan(80);
  });
});
