import { describe, expect, it } from "vitest";
import { OptionsError } from "../src/config/optionsError.js";
import { savedCrawlState, stateOptions } from "../src/config/groups/stateOptions.js";

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
});

describe("what a state file keeps of the command line", () => {
  it("the flags given, under their config keys, but no URL holding a password", async () => {
    const { buildCrawlProgram, crawlFlags } = await import("../src/cli/crawl.js");
    const program = buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
    const flags = crawlFlags(program, ["--url", "http://a.test/", "--limit", "5", "--redisStoreUrl", "redis://:s3cret@127.0.0.1:6390/0",
      "--redisDedupeUrl", "redis://127.0.0.1:6391/0"], "user", {});
    expect(flags.configToSave).toEqual({ url: ["http://a.test/"], limit: "5", redisDedupeUrl: "redis://127.0.0.1:6391/0" });
  });
});
