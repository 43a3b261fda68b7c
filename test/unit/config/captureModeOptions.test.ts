import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { resolveCrawlOptions } from "../../../src/config/crawlOptions.js";
import { captureModeOptions } from "../../../src/config/groups/captureModeOptions.js";
import { OptionsError } from "../../../src/config/optionsError.js";

const quietProgram = () => buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
const optionsFrom = (args: string[], env: NodeJS.ProcessEnv = {}) => resolveCrawlOptions(crawlFlags(quietProgram(), args, "user", env), {});

const cwd = mkdtempSync(join(tmpdir(), "capture-mode-options-"));
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe("--captureMode, --hybridLearnPages, --hybridVerifyEvery", () => {
  it("default to browser mode, 2 pages learned, every 20th verified", () => {
    expect(optionsFrom(["--url", "http://a.test/"]).capture).toEqual({ mode: "browser", learnPages: 2, verifyEvery: 20 });
  });

  it("come from the command line, a YAML config and CRAWL_ARGS alike", () => {
    const expected = { mode: "hybrid", learnPages: 3, verifyEvery: 0 };
    expect(optionsFrom(["--url", "http://a.test/", "--captureMode", "hybrid", "--hybridLearnPages", "3", "--hybridVerifyEvery", "0"]).capture).toEqual(expected);
    const config = join(cwd, "hybrid.yaml");
    writeFileSync(config, "seeds:\n  - http://a.test/\ncaptureMode: hybrid\nhybridLearnPages: 3\nhybridVerifyEvery: 0\n");
    expect(optionsFrom(["--config", config]).capture).toEqual(expected);
    expect(optionsFrom(["--url", "http://a.test/"], { CRAWL_ARGS: "--captureMode hybrid --hybridLearnPages 3 --hybridVerifyEvery 0" }).capture).toEqual(expected);
  });

  it("refuse an unknown mode and counts out of range with one line naming the flag", () => {
    expect(() => optionsFrom(["--url", "http://a.test/", "--captureMode", "static"])).toThrow();
    expect(() => captureModeOptions({ captureMode: "static" }, { screenshots: 0, customLinkSelectors: false })).toThrow(/^--captureMode must be one of browser, hybrid, got "static"$/);
    expect(() => captureModeOptions({ hybridLearnPages: "0" }, { screenshots: 0, customLinkSelectors: false })).toThrow(/^--hybridLearnPages must be at least 1, got 0$/);
    expect(() => captureModeOptions({ hybridVerifyEvery: "-1" }, { screenshots: 0, customLinkSelectors: false })).toThrow(/^--hybridVerifyEvery must be at least 0, got -1$/);
    expect(() => captureModeOptions({ hybridVerifyEvery: "often" }, { screenshots: 0, customLinkSelectors: false })).toThrow(OptionsError);
  });

  it("refuse hybrid mode with what only a browsed page has: screenshots, custom link selectors", () => {
    expect(() => optionsFrom(["--url", "http://a.test/", "--captureMode", "hybrid", "--screenshot", "view"])).toThrow(/^--captureMode hybrid takes no screenshots of the pages it does not browse/);
    expect(() => optionsFrom(["--url", "http://a.test/", "--captureMode", "hybrid", "--selectLinks", "a.next->href"])).toThrow(/^--captureMode hybrid reads links as a\[href\] and area\[href\]/);
    expect(optionsFrom(["--url", "http://a.test/", "--screenshot", "view"]).capture.mode).toBe("browser");
  });
});
