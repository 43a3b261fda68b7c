import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { CANNOT_APPLY, compatWarnings } from "../../../src/config/browsertrix/flags.js";
import { resolveCrawlOptions } from "../../../src/config/crawlOptions.js";
import { dedupeFlagOptions } from "../../../src/config/groups/dedupeFlagOptions.js";
import { OptionsError } from "../../../src/config/optionsError.js";
import { runCli } from "../../helpers/cli.js";

const quietProgram = () => buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
const optionsFrom = (args: string[]) => resolveCrawlOptions(crawlFlags(quietProgram(), args, "user", {}), {});
function warningsFrom(args: string[]): string[] {
  const program = quietProgram();
  crawlFlags(program, args, "user", {});
  return compatWarnings(program);
}

const cwd = mkdtempSync(join(tmpdir(), "dedupe-flag-options-"));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe("--dedupePagesMinDepth and --dedupeConcurrent", () => {
  it("default to off: -1 and false", () => {
    expect(optionsFrom(["--url", "http://a.test/"]).dedupeFlags).toEqual({ pagesMinDepth: -1, concurrent: false });
  });

  it("take a depth (0 included) and a switch, from the command line and from a browsertrix config's keys alike", () => {
    expect(optionsFrom(["--url", "http://a.test/", "--dedupePagesMinDepth", "0", "--dedupeConcurrent"]).dedupeFlags).toEqual({ pagesMinDepth: 0, concurrent: true });
    expect(dedupeFlagOptions({ dedupePagesMinDepth: " 2 " })).toEqual({ pagesMinDepth: 2, concurrent: false });
    expect(warningsFrom(["--url", "http://a.test/", "--dedupePagesMinDepth", "0", "--dedupeConcurrent"])).toEqual([]);
  });

  it("refuse what is not a depth with one line naming the flag", () => {
    for (const bad of ["-2", "1.5", "one", ""]) {
      expect(() => dedupeFlagOptions({ dedupePagesMinDepth: bad })).toThrow(OptionsError);
      expect(() => dedupeFlagOptions({ dedupePagesMinDepth: bad })).toThrow(/^--dedupePagesMinDepth must be a depth of 0 or more, or -1 for never, got /);
    }
  });

  it("a bad depth on the command line exits with code 4 and that line, before anything is crawled", async () => {
    const result = await runCli("crawl", ["--url", "http://127.0.0.1:9/", "--cwd", cwd, "--dedupePagesMinDepth", "deep"]);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('--dedupePagesMinDepth must be a depth of 0 or more, or -1 for never, got "deep"');
  });
});

describe("--driver", () => {
  it("is accepted, and warned about with why it cannot apply", () => {
    expect(warningsFrom(["--url", "http://a.test/", "--driver", "/crawls/driver.mjs"])).toEqual([
      `--driver accepted for browsertrix-crawler compatibility but not applied: ${CANNOT_APPLY.driver}`,
    ]);
    expect(CANNOT_APPLY.driver).toMatch(/--customBehaviors/);
  });
});

describe("--useSHA1", () => {
  it("is accepted, and warned about with why it cannot apply (not as 'not implemented yet')", () => {
    expect(warningsFrom(["--url", "http://a.test/", "--useSHA1"])).toEqual([
      `--useSHA1 accepted for browsertrix-crawler compatibility but not applied: ${CANNOT_APPLY.useSHA1}`,
    ]);
    expect(CANNOT_APPLY.useSHA1).toMatch(/sha256/);
    // browsertrix-crawler's default (false) asks for nothing.
    const config = join(cwd, "sha1-off.yaml");
    writeFileSync(config, "url: http://a.test/\nuseSHA1: false\n");
    expect(warningsFrom(["--config", config])).toEqual([]);
  });

  it("is listed in the help apart from the flags not implemented yet", () => {
    let text = "";
    const program = buildCrawlProgram().configureOutput({ writeOut: (s) => (text += s), writeErr: () => undefined }).exitOverride();
    try {
      program.parse(["--help"], { from: "user" });
    } catch {
      // commander exits after printing the help
    }
    const notYet = text.split("but not implemented yet:")[1]?.split("\n")[1] ?? "";
    expect(notYet).not.toContain("--useSHA1");
    expect(text).toMatch(/but cannot apply here:\n\s+--driver --useSHA1 --qaSource\n/);
  });
});
