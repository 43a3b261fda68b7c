import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run a built CLI (`npm run build` first: `npm test` does) as a real child process. */
const ENTRIES = { crawl: "dist/src/cli/crawl.js", indexer: "dist/indexer/cli.js", history: "dist/src/cli/history.js", "create-login-profile": "dist/src/cli/createLoginProfile.js", qa: "dist/src/cli/qa.js", replay: "dist/src/cli/replay.js" } as const;

export function runCli(program: keyof typeof ENTRIES, args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  const entry = ENTRIES[program];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry, ...args], { cwd: ROOT, env: { ...process.env, ...opts.env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 180_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/**
 * Run `crawl` and interrupt it with one SIGINT once it logged its first crawled page (a second signal would be
 * a forced stop, exit 13): for tests of a crawl that is interrupted, then resumed by the same command.
 */
export function crawlInterruptedAfterFirstPage(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [ENTRIES.crawl, ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, ...env } });
    let stderr = "";
    let interrupted = false;
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!interrupted && stderr.includes('"page crawled"')) {
        interrupted = true;
        child.kill("SIGINT");
      }
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** The JSON log lines a CLI wrote to stderr. */
export function logLines(stderr: string): { timestamp: string; logLevel: string; context: string; message: string; details: Record<string, unknown> }[] {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { timestamp: string; logLevel: string; context: string; message: string; details: Record<string, unknown> });
}

/**
 * Crawl flags for suites about something other than capture completeness (sharing, storage, resume,
 * dedupe, refresh, indexing): in-page behaviors, on by default, cost about a second a page, and their
 * default path is covered by the crawl, fault, reliability and behaviors suites. Keeps CI under 20 minutes.
 */
export const NO_BEHAVIORS = ["--behaviors", ""];
