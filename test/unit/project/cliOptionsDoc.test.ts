// docs/user-guide/cli-options.md is generated from each command's --help (scripts/cli-options.mjs): it must
// match the built programs, so that no flag goes undocumented. Needs dist/ (npm test builds first).
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");
const DOC = "docs/user-guide/cli-options.md";
const GENERATOR = "scripts/cli-options.mjs";

const bin = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> }).bin;

const helps = new Map<string, string>();

function help(command: string): string {
  if (!helps.has(command)) helps.set(command, runHelp(command));
  return helps.get(command)!;
}

function runHelp(command: string): string {
  return execFileSync(process.execPath, [join(ROOT, bin[command]!), "--help"], {
    cwd: ROOT,
    env: { COLUMNS: "80", NO_COLOR: "1" },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** The option terms of a help text ("--url <url...>", "-V, --version"), each as it begins its line. */
function optionTerms(text: string): string[] {
  const options = text.split(/^Options:$/m)[1] ?? "";
  const terms: string[] = [];
  for (const line of options.split("\n")) {
    const match = /^ {2}((?:-\w, )?--[A-Za-z0-9][\w-]*(?: [<[]\S*[>\]])?)(?: {2,}|$)/.exec(line);
    if (match) terms.push(match[1]!);
  }
  return terms;
}

/** The doc's section for a command: from its "## name" heading to the next heading. */
function section(doc: string, command: string): string {
  const start = doc.indexOf(`\n## ${command}\n`);
  expect(start, `${DOC} has no "## ${command}" section: run \`npm run build && npm run docs:cli\``).toBeGreaterThanOrEqual(0);
  const next = doc.indexOf("\n## ", start + 1);
  return doc.slice(start, next < 0 ? undefined : next);
}

describe("CLI options page", () => {
  it(`${DOC} is what ${GENERATOR} writes from the built commands' --help`, () => {
    const run = spawnSync(process.execPath, [join(ROOT, GENERATOR), "--check"], { cwd: ROOT, encoding: "utf8" });
    expect(run.status, `${GENERATOR} --check failed (exit ${run.status}): ${run.stderr.trim() || run.error}`).toBe(0);
  });

  it("has a section for every command of package.json's bin, listing each option of its --help", () => {
    const doc = readFileSync(join(ROOT, DOC), "utf8");
    expect(Object.keys(bin).sort()).toEqual(["crawl", "create-login-profile", "history", "indexer", "qa", "replay"]);
    for (const command of Object.keys(bin)) {
      const terms = optionTerms(help(command));
      expect(terms, `${command} --help: no options found`).toContain("-h, --help");
      const text = section(doc, command);
      const missing = terms.filter((term) => !text.includes(`\n  ${term}`));
      expect(missing, `${DOC}, section ${command}, lacks these options of \`${command} --help\``).toEqual([]);
      // Flags named anywhere in the help (aliases, the after-options notes) too.
      const named = [...new Set(help(command).match(/--[A-Za-z][\w-]*/g))];
      const unnamed = named.filter((flag) => !new RegExp(`${flag}(?![\\w-])`).test(text));
      expect(unnamed, `${DOC}, section ${command}, never names these flags of \`${command} --help\``).toEqual([]);
    }
  });

  it("the options read from --help are the real ones", () => {
    const longFlags = (command: string) => optionTerms(help(command)).map((term) => /--[\w-]+/.exec(term)![0]);
    const crawl = longFlags("crawl");
    expect(crawl.length).toBeGreaterThan(100);
    expect(crawl).toEqual(expect.arrayContaining(["--url", "--generateWACZ", "--scopeType", "--redisDedupeUrl", "--workers", "--version", "--help"]));
    expect(longFlags("indexer")).toEqual(expect.arrayContaining(["--sourceUrl", "--remove", "--redisDedupeUrl", "--commitCrawlId"]));
    expect(longFlags("history")).toEqual(expect.arrayContaining(["--url", "--json"]));
    expect(longFlags("qa")).toEqual(expect.arrayContaining(["--qaSource", "--qaThreshold"]));
    expect(longFlags("replay")).toEqual(expect.arrayContaining(["--list", "--export", "--from", "--allowMissing", "--port", "--host", "--cwd"]));
    expect(longFlags("create-login-profile")).toEqual(expect.arrayContaining(["--url", "--filename", "--automated"]));
  });
});
