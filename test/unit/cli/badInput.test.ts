import { mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../helpers/cli.js";
import { closedPort } from "../../helpers/closedPort.js";

let cwd: string;
beforeAll(() => {
  cwd = mkdtempSync(join(tmpdir(), "crawl-bad-"));
});
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

/** The human-readable error: the last non-JSON line on stderr. */
function errorLine(stderr: string): string {
  return stderr.trim().split("\n").filter((l) => !l.startsWith("{")).pop() ?? "";
}

describe("bad input gives one clear line and a non-zero exit", () => {
  it.each([
    [["--url", "not a url"], /bad seed URL: not a valid URL/],
    [["--url", "file:///etc/passwd"], /only http\(s\) URLs can be crawled, got file:/],
    [["--url", "chrome://settings"], /only http\(s\) URLs/],
    [["--url", "http://127.0.0.1/", "--frobnicate"], /unknown option '--frobnicate'/],
    [["--url", "http://127.0.0.1/", "--workers", "zero"], /--workers must be a whole number/],
    [["--url", "http://127.0.0.1/", "--scopeType", "galaxy"], /--scopeType.*galaxy.*invalid|Allowed choices/],
    [["--url", "http://127.0.0.1/", "--collection", "../escape"], /--collection may hold only/],
    [["--url", "http://127.0.0.1/", "--collection", ".."], /--collection may hold only .*not only dots/],
    [["--url", "http://127.0.0.1/", "--collection", "."], /--collection may hold only .*not only dots/],
    [[], /no seed URL given/],
    [["--url", "http://127.0.0.1/", "--allowAddresses", "private,10.0.0.0/33"], /--allowAddresses takes IP ranges .* got "10\.0\.0\.0\/33"/],
  ])("crawl %j", async (args, message) => {
    const result = await runCli("crawl", [...args, "--cwd", cwd]);
    expect(result.code).toBe(4);
    expect(errorLine(result.stderr)).toMatch(message);
    expect(result.stderr.trim().split("\n").length).toBe(1);
  });

  it("a --config whose nested aliases expand to 9^9 values (\"billion laughs\") is one line, exit 4, not an out-of-memory crash", async () => {
    // Each list names the one before nine times: a few hundred bytes that stand for 387 million strings.
    const names = "abcdefghi";
    const lines = [`  a: &a [${Array(9).fill('"lol"').join(",")}]`];
    for (let i = 1; i < names.length; i++) lines.push(`  ${names[i]}: &${names[i]} [${Array(9).fill(`*${names[i - 1]}`).join(",")}]`);
    const config = join(cwd, "laughs.yaml");
    writeFileSync(config, `url: http://127.0.0.1:9/\ninclude:\n${lines.join("\n")}\n`);
    const result = await runCli("crawl", ["--config", config, "--cwd", cwd], { timeoutMs: 60_000 });
    expect({ code: result.code, signal: result.signal }, result.stderr.slice(-500)).toEqual({ code: 4, signal: null });
    expect(result.stderr).toBe(`crawl: --config ${config}: its aliases expand to more than 100000 values (nested aliases, a "billion laughs"): refused\n`);
  });

  it("an unreachable --redisStoreUrl fails fast with exit 8 (Redis unavailable) and writes no WARC", async () => {
    const port = await closedPort();
    const result = await runCli("crawl", ["--url", "http://127.0.0.1:9/", "--redisStoreUrl", `redis://127.0.0.1:${port}/0`, "--cwd", cwd, "--collection", "noredis"]);
    expect(result.code).toBe(8);
    expect(errorLine(result.stderr)).toMatch(new RegExp(`cannot reach crawl-state Redis \\(--redisStoreUrl\\) at redis://127.0.0.1:${port}/0`));
    expect(readdirSync(join(cwd, "collections", "noredis", "archive"))).toEqual([]);
  });

  it("a seed on a link-local (cloud metadata) address is refused before anything is fetched, naming the way out", async () => {
    const result = await runCli("crawl", ["--url", "http://169.254.169.254/latest/meta-data/", "--cwd", cwd, "--collection", "metadata"]);
    expect(result.code).toBe(4);
    expect(errorLine(result.stderr)).toBe("crawl: seed http://169.254.169.254/latest/meta-data/ is not crawled: 169.254.169.254, a link-local address (--allowAddresses can allow it)");
    expect(readdirSync(join(cwd, "collections", "metadata", "archive"))).toEqual([]);
  });

  it("an unreachable seed fails with exit 9 (all seeds failed) naming the URL", async () => {
    const port = await closedPort();
    const seed = `http://127.0.0.1:${port}/`;
    const result = await runCli("crawl", ["--url", seed, "--cwd", cwd, "--collection", "noseed", "--maxPageRetries", "0"]);
    expect(result.code).toBe(9);
    expect(errorLine(result.stderr)).toContain(`no page could be crawled: ${seed} failed: net::ERR_CONNECTION_REFUSED`);
  });
});
