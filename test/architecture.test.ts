// The folder layout is the architecture: these rules keep it readable as the code grows.
// Imports are read from the sources (type-only imports count: they tie modules together all the same).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
const MAX_LINES = 400;

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
const graph = importGraph(files);

function importsOf(prefix: string): { from: string; to: string }[] {
  return [...graph].filter(([file]) => file.startsWith(prefix)).flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
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

  it(`no file in src/ is over ${MAX_LINES} lines`, () => {
    const long = files.filter((f) => f.startsWith("src/")).map((f) => ({ file: f, lines: readFileSync(join(ROOT, f), "utf8").split("\n").length }));
    expect(long.filter((f) => f.lines > MAX_LINES)).toEqual([]);
  });

  it("archive/ is a WARC library: it imports nothing of ours outside itself", () => {
    expect(importsOf("src/archive/").filter(({ to }) => !to.startsWith("src/archive/"))).toEqual([]);
  });

  it("dedupe/ decides and keeps the index: it writes no records and knows nothing of the browser, the pipeline or the crawl", () => {
    const upward = ["src/archive/", "src/pipeline/", "src/browser/", "src/crawl/", "src/fetch/"];
    expect(importsOf("src/dedupe/").filter(({ to }) => upward.some((p) => to.startsWith(p)))).toEqual([]);
  });

  it("src/ never imports the indexer; the WACZ writer (src/wacz/) never imports Redis-side code", () => {
    expect(importsOf("src/").filter(({ to }) => !to.startsWith("src/"))).toEqual([]);
    const redisSide = ["src/state/", "src/dedupe/", "src/redis/", "src/pipeline/", "src/crawl/"];
    expect(importsOf("src/wacz/").filter(({ to }) => redisSide.some((p) => to.startsWith(p)))).toEqual([]);
  });

  it("every byte archived from outside the browser is fetched in fetch/: the browser side has no HTTP client of its own", () => {
    const browser = files.filter((f) => f.startsWith("src/browser/") || f.startsWith("src/pipeline/"));
    // node:http's STATUS_CODES is a table, not a client: only its request functions count.
    const client = /from\s+["'](undici|node:https)["']|import\s*\{[^}]*\b(request|get|Agent)\b[^}]*\}\s*from\s+["']node:http["']|\bfetch\(/;
    const withClient = browser.filter((f) => client.test(readFileSync(join(ROOT, f), "utf8")));
    expect(withClient).toEqual([]);
  });

  it("runCrawl reads as the list of its stages (under 80 lines)", () => {
    const text = readFileSync(join(ROOT, "src/crawl/crawler.ts"), "utf8");
    const start = text.indexOf("export async function runCrawl(");
    expect(start).toBeGreaterThan(0);
    const end = text.indexOf("\n}\n", start);
    expect(text.slice(start, end).split("\n").length).toBeLessThan(80);
  });
});
