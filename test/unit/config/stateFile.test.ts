import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { load } from "js-yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { stateOptions } from "../../../src/config/groups/stateOptions.js";
import { configToSave } from "../../../src/config/savedConfig.js";
import { stateFileChunks, withoutUrlPasswords, withUrlPasswords } from "../../../src/config/stateFile.js";
import { writeWholeFile } from "../../../src/durable/wholeFile.js";
import type { SavedCrawlState } from "../../../src/frontier/savedState.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "state-file-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const entry = (url: string, extra: Record<string, unknown> = {}) => JSON.stringify({ url, seedId: 0, depth: 1, extraHops: 0, ...extra });

function emptyState(): SavedCrawlState {
  return { id: "c", finished: [], queued: [], pending: [], failed: [], errors: [], extraSeeds: [], excluded: [], sitemapDone: false };
}

describe("a state file written in pieces", () => {
  it("a state of a million finished pages: written chunk by chunk (none near a string's limit), read back line by line", async () => {
    const n = 1_000_000;
    const state: SavedCrawlState = {
      ...emptyState(),
      finished: Array.from({ length: n }, (_, i) => `https://example.test/page/${i}?q=${i % 7}`),
      queued: Array.from({ length: 20_000 }, (_, i) => entry(`https://example.test/next/${i}`)),
    };
    let chunks = 0;
    let largest = 0;
    let bytes = 0;
    const counted = (function* () {
      for (const chunk of stateFileChunks({ url: ["https://example.test/"], workers: 2 }, state)) {
        chunks++;
        largest = Math.max(largest, chunk.length);
        bytes += Buffer.byteLength(chunk);
        yield chunk;
      }
    })();
    const file = join(dir, "big.yaml");
    await writeWholeFile(file, counted, { mode: 0o600 });
    expect(statSync(file).size).toBe(bytes);
    expect(bytes).toBeGreaterThan(40_000_000);
    expect(chunks).toBeGreaterThan(500);
    expect(largest).toBeLessThan(1_000_000);
    // Read back line by line (the YAML of every kind of string is checked below, on a small state).
    const lines = readFileSync(file, "utf8").split("\n");
    expect(lines[0]).toBe("crawlStateFile: 1");
    expect(lines.at(-2)).toBe("crawlStateFileEnd: true");
    const finishedAt = lines.indexOf("  finished:");
    const queuedAt = lines.indexOf("  queued:");
    expect(queuedAt - finishedAt - 1).toBe(n);
    expect(lines[finishedAt + n]).toBe(`    - "${state.finished[n - 1]}"`);
    expect(load(lines[queuedAt + 12346]!.slice(6))).toBe(state.queued[12345]);
  }, 60_000);

  it("is the YAML browsertrix-crawler reads: strings of any characters, budgets, errors come back as they were", async () => {
    const state: SavedCrawlState = {
      ...emptyState(),
      finished: ["https://a.test/é?x=\"q\"&y='z'", "https://a.test/\u0085\u2028\ufeff-#: -", "- not a list", ""],
      errors: [JSON.stringify({ message: "line\nbreak\ttab \\ back" })],
      failed: [entry("https://a.test/f", { retry: 2 })],
      budgetCounts: { seedPages: { "0": 3 }, seedBytes: { "0": 1000 }, hostPages: { "a.test": 3 }, seedEnds: { "0": "pageLimit" } },
    };
    const file = join(dir, "chars.yaml");
    await writeWholeFile(file, stateFileChunks({ seeds: [{ url: "https://a.test/", scopeType: "prefix" }] }, state));
    const back = load(readFileSync(file, "utf8")) as { state: SavedCrawlState; seeds: unknown };
    expect(back.state).toEqual(state);
    expect(back.seeds).toEqual([{ url: "https://a.test/", scopeType: "prefix" }]);
    expect(stateOptions(crawlFlags(buildCrawlProgram().exitOverride(), ["--config", file], "user")).resumeFrom).toEqual(state);
  });
});

describe("a seed's password", () => {
  it("is in no state file: the seed setting is withheld (named), the URLs of the state keep their user name only", async () => {
    const program = buildCrawlProgram().exitOverride();
    const flags = crawlFlags(program, ["--url", "https://alice:s3cr3tpw@a.test/", "--workers", "2"], "user");
    const config = flags.configToSave!;
    expect(config.url).toBeUndefined();
    expect(config.secretsWithheld).toEqual({ keys: ["url"], config: null });
    expect(config.workers).toBe("2");
    const state: SavedCrawlState = {
      ...emptyState(),
      finished: ["https://alice:s3cr3tpw@a.test/"],
      queued: [entry("https://alice:s3cr3tpw@a.test/next")],
      pending: [entry("https://b.test/plain")],
    };
    const { state: kept, withheld } = withoutUrlPasswords(state);
    expect(withheld).toBe(2);
    const file = join(dir, "password.yaml");
    await writeWholeFile(file, stateFileChunks(config, kept));
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain("s3cr3tpw");
    expect(text).toContain("https://alice@a.test/next");
    // Resumed with the seed given again: its password goes back into the URLs found under it.
    const resumed = stateOptions(crawlFlags(buildCrawlProgram().exitOverride(), ["--config", file, "--url", "https://alice:s3cr3tpw@a.test/"], "user")).resumeFrom!;
    expect(withUrlPasswords(resumed, ["https://alice:s3cr3tpw@a.test/"])).toMatchObject({ finished: state.finished, queued: state.queued, pending: state.pending });
    // A seed from a --config file the same way.
    const seeds = configToSave(buildCrawlProgram(), { seeds: [{ url: "https://bob:pw2pw2@b.test/" }], workers: 1 }, "/x/config.yaml");
    expect(seeds).toEqual({ workers: 1, secretsWithheld: { keys: ["seeds"], config: "/x/config.yaml" } });
  });
});
