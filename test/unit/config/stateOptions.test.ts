import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dump } from "js-yaml";
import { describe, expect, it } from "vitest";
import { OptionsError } from "../../../src/config/optionsError.js";
import { savedCrawlState, stateOptions } from "../../../src/config/groups/stateOptions.js";

describe("state options (browsertrix-crawler's --saveState, Redis lists, log contexts)", () => {
  it("has browsertrix-crawler's defaults", () => {
    expect(stateOptions({})).toEqual({
      saveState: "partial", saveStateIntervalSeconds: 300, saveStateHistory: 5, resumeFrom: null, configToSave: {},
      writePagesToRedis: false, logErrorsToRedis: false, logBehaviorsToRedis: false,
      logContexts: [], logExcludeContexts: ["recorderNetwork", "jsError", "screencast"],
    });
  });

  it("takes comma-separated, repeated contexts, ours and browsertrix-crawler's", () => {
    const options = stateOptions({ context: ["page,crawl", "pageStatus"], logExcludeContext: ["redis"] });
    expect(options.logContexts).toEqual(["page", "crawl", "pageStatus"]);
    expect(options.logExcludeContexts).toEqual(["redis"]);
  });

  it.each([
    [{ saveState: "sometimes" }, /--saveState must be one of never, partial, always/],
    [{ saveStateInterval: "0" }, /--saveStateInterval/],
    [{ saveStateHistory: "1.5" }, /--saveStateHistory/],
    [{ context: ["nope"] }, /--context: unknown log context "nope"/],
    [{ savedState: "text" }, /state must be a mapping/],
    [{ savedState: { queued: ["{not json"] } }, /state.queued\[0\] is not JSON/],
    [{ savedState: { queued: ['{"depth":1}'] } }, /state.queued\[0\] has no URL/],
  ])("refuses %j", (flags, message) => {
    expect(() => stateOptions(flags)).toThrow(OptionsError);
    expect(() => stateOptions(flags)).toThrow(message);
  });

  it("reads a browsertrix-crawler state section: pending entries may be objects, missing lists are empty", () => {
    const state = savedCrawlState({ finished: ["http://a.test/"], pending: [{ url: "http://a.test/x", seedId: 0, depth: 1 }], sitemapDone: true });
    expect(state).toEqual({
      finished: ["http://a.test/"], queued: [], pending: ['{"url":"http://a.test/x","seedId":0,"depth":1}'], failed: [], errors: [],
      extraSeeds: [], excluded: [], sitemapDone: true,
    });
  });

  it("reads our budget counts, and refuses a wrong one by name before anything is loaded", () => {
    const budgetCounts = { seedPages: { "0": 3 }, seedBytes: { "0": 12345 }, hostPages: { "a.test": 3 }, seedEnds: { "1": "pageLimit" } };
    expect(savedCrawlState({ finished: [], budgetCounts }).budgetCounts).toEqual(budgetCounts);
    expect(savedCrawlState({ finished: [], budgetCounts: {} }).budgetCounts).toEqual({ seedPages: {}, seedBytes: {}, hostPages: {}, seedEnds: {} });
    expect(() => savedCrawlState({ budgetCounts: { seedPages: { "0": "three" } } })).toThrow('--config: state.budgetCounts.seedPages.0 must be a number, got "three"');
    expect(() => savedCrawlState({ budgetCounts: { seedBytes: { "0": -1 } } })).toThrow("--config: state.budgetCounts.seedBytes.0 must be a number, got -1");
    expect(() => savedCrawlState({ budgetCounts: { seedEnds: { "0": "done" } } })).toThrow('--config: state.budgetCounts.seedEnds.0 must be pageLimit or sizeLimit, got "done"');
    expect(() => savedCrawlState({ budgetCounts: [1] })).toThrow("--config: state.budgetCounts must be a mapping");
  });
});

describe("what a state file keeps of the command line", () => {
  it("the flags given, under their config keys, but no URL holding a password", async () => {
    const { buildCrawlProgram, crawlFlags } = await import("../../../src/cli/crawl.js");
    const program = buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    const flags = crawlFlags(program, ["--url", "http://a.test/", "--limit", "5", "--redisStoreUrl", "redis://:s3cret@127.0.0.1:6390/0",
      "--redisDedupeUrl", "redis://127.0.0.1:6391/0"], "user", {});
    expect(flags.configToSave).toEqual({
      url: ["http://a.test/"], limit: "5", redisDedupeUrl: "redis://127.0.0.1:6391/0",
      secretsWithheld: { keys: ["redisStoreUrl"], config: null },
    });
  });

  it("no secret of the --config file either: passwords, a token before @, credential query parameters; a resume reads them from that file again", async () => {
    const { buildCrawlProgram, crawlFlags } = await import("../../../src/cli/crawl.js");
    const dir = mkdtempSync(join(tmpdir(), "saved-config-"));
    try {
      const config = join(dir, "crawl.yaml");
      writeFileSync(config, [
        "seeds: [http://a.test/, {url: 'http://b.test/search?key=cats', auth: 'u:seed-auth-pw'}]",
        "redisStoreUrl: redis://:s3cret-pw@127.0.0.1:6390/0",
        "proxyServer: socks5://u:pr0xy-pw@127.0.0.1:1080",
        "customBehaviors: [git+https://ghp_loneToken123@github.example/x.git]",
        "seedFile: https://bucket.s3.example/seeds.txt?X-Amz-Signature=abcdef0123&X-Amz-Expires=300",
        "loginUrl: https://a.test/login?next=/home",
        "workers: 2",
        "",
      ].join("\n"));
      const program = () => buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
      const saved = crawlFlags(program(), ["--config", config, "--limit", "5"], "user", {}).configToSave;
      const text = JSON.stringify(saved);
      for (const secret of ["s3cret-pw", "pr0xy-pw", "ghp_loneToken123", "abcdef0123", "seed-auth-pw"]) expect(text).not.toContain(secret);
      // A seed's own query is the page's address: kept (its per-seed auth is not).
      expect(saved).toEqual({
        seeds: ["http://a.test/", { url: "http://b.test/search?key=cats" }], loginUrl: "https://a.test/login?next=/home", workers: 2, limit: "5",
        secretsWithheld: { keys: ["redisStoreUrl", "proxyServer", "customBehaviors", "seedFile"], config },
      });

      // Resumed from that state file: the withheld settings come back from crawl.yaml, the others from the state file.
      const stateFile = join(dir, "state.yaml");
      writeFileSync(stateFile, dump({ ...saved, state: { finished: [], queued: [] } }));
      const resumed = crawlFlags(program(), ["--config", stateFile], "user", {});
      expect(resumed).toMatchObject({ redisStoreUrl: "redis://:s3cret-pw@127.0.0.1:6390/0", proxyServer: "socks5://u:pr0xy-pw@127.0.0.1:1080", workers: "2", limit: "5" });
      // Saved again by the resumed crawl: still withheld, still pointing at crawl.yaml.
      expect(JSON.stringify(resumed.configToSave)).not.toContain("s3cret-pw");
      expect(resumed.configToSave?.secretsWithheld).toEqual({ keys: ["redisStoreUrl", "proxyServer", "customBehaviors", "seedFile"], config });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
