// The one seam object: a process with no test variable gets the seams that do nothing; a test mode reads the
// variables each time it is asked, so an in-process test may change one between steps.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NO_TEST_SEAMS, testSeamsFrom } from "../../../src/util/testSeams.js";

describe("test seams", () => {
  it("an environment without a test variable gets the seams that do nothing", () => {
    expect(testSeamsFrom({ PATH: "/usr/bin", DEBUG_ACCESS_HOST: "0.0.0.0", TEST_PAUSE_AT: "drain-check" })).toBe(NO_TEST_SEAMS);
    expect(NO_TEST_SEAMS.fileWriting()).toEqual({ durable: true, syncLog: undefined });
    expect([NO_TEST_SEAMS.hostPairs(), NO_TEST_SEAMS.linkLocalRanges(), NO_TEST_SEAMS.dnsForbidden(), NO_TEST_SEAMS.pidNamespace()]).toEqual([[], [], undefined, undefined]);
  });

  it("a test mode reads each variable when asked", async () => {
    const env: NodeJS.ProcessEnv = { CRAWLER_TEST_NO_DNS: "1" };
    const seams = testSeamsFrom(env);
    expect(seams).not.toBe(NO_TEST_SEAMS);
    expect(seams.dnsForbidden()).toBe("not resolved in tests (CRAWLER_TEST_NO_DNS)");
    expect(seams.hostPairs()).toEqual([]);
    env.CRAWLER_TEST_HOSTS = "evil.test=127.0.0.2, cdn.test=127.0.0.1";
    env.CRAWLER_TEST_PID_NAMESPACE = "elsewhere";
    env.WARC_CRAWLER_TEST_UPLOAD_PART_MIB = "5";
    expect(seams.hostPairs()).toEqual(["evil.test=127.0.0.2", "cdn.test=127.0.0.1"]);
    expect([seams.pidNamespace(), seams.uploadPartMib()]).toEqual(["elsewhere", 5]);

    env.WARC_CRAWLER_TEST_FAIL_BODY_ONCE = "/c/";
    expect(["http://a/c/1", "http://a/c/1", "http://a/d/1", "http://a/c/2"].map((url) => seams.failBodyReadOnce(url))).toEqual([true, false, false, true]);

    const syncLog = join(mkdtempSync(join(tmpdir(), "seams-")), "sync.log");
    env.CRAWLER_TEST_SYNC_LOG = syncLog;
    env.CRAWLER_TEST_NO_DURABLE_WRITES = "1";
    const writing = seams.fileWriting();
    expect(writing.durable).toBe(false);
    writing.syncLog!.entrySynced("a.warc.gz");
    writing.syncLog!.synced("a.warc.gz", 120);
    expect(readFileSync(syncLog, "utf8")).toBe("a.warc.gz entry\na.warc.gz 120\n");

    const started = Date.now();
    env.CRAWLER_TEST_PAUSE_AT = "drain-check,state-load";
    env.CRAWLER_TEST_PAUSE_MS = "200";
    await seams.pause("before-package");
    expect(Date.now() - started).toBeLessThan(150);
    await seams.pause("state-load");
    expect(Date.now() - started).toBeGreaterThanOrEqual(195);
  });
});
