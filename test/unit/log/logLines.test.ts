/** What the log writes: secrets found in settings are scrubbed from every line, and a line is its entry's JSON. */
import { describe, expect, it, vi } from "vitest";
import { forgetSecrets, registerSecrets, scrubSecrets, secretsOf } from "../../../src/log/secrets.js";
import { logger, type LogEntry } from "../../../src/log/logger.js";

describe("secrets in settings", () => {
  it("are found in URLs and scrubbed from text written, in every form", () => {
    expect(secretsOf("redis://:pw-1@h:1/0 http://bob:pw-2@h socks5://u:p%40ss3@h https://tok4@h ssh://root@h")).toEqual(["pw-1", "pw-2", "p@ss3", "tok4"]);
    expect(secretsOf("https://s3/x?X-Amz-Signature=sig5&X-Amz-Credential=cred6&page=2&api_key=k7&sig=s8&keyword=cats&monkey=no")).toEqual(["sig5", "cred6", "k7", "s8"]);
    registerSecrets(["tok-\"9\\", "p@ss-10"]);
    try {
      expect(scrubSecrets(JSON.stringify({ a: "x tok-\"9\\ y", b: "p%40ss-10", c: "http://u:other-pw@h/" }))).toBe(JSON.stringify({ a: "x *** y", b: "***", c: "http://u:***@h/" }));
    } finally {
      forgetSecrets();
    }
  });

  it("a log line is the entry's JSON, key for key, with secrets scrubbed from its message and details only", () => {
    const seen: { entry: LogEntry; line: string }[] = [];
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    logger.onLine((entry, line) => seen.push({ entry, line }));
    registerSecrets(["info-secret-1234", "p@ss-11"]);
    try {
      logger.warn("capture", 'quote " and \\ and \u2028', { url: "http://u:p%40ss-11@h/", n: 3, nested: { list: [1, "info-secret-1234"] }, gone: undefined });
      logger.warn("crawl", "key info-secret-1234 given");
      logger.warn("crawl", "no details");
    } finally {
      logger.onLine(null);
      forgetSecrets();
      stderr.mockRestore();
    }
    expect(seen.map(({ entry }) => [entry.message, entry.details])).toEqual([
      ['quote " and \\ and \u2028', { url: "http://u:***@h/", n: 3, nested: { list: [1, "***"] } }],
      ["key *** given", {}],
      ["no details", {}],
    ]);
    for (const { entry, line } of seen) expect(line).toBe(JSON.stringify(entry));
  });
});
