import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ENTRY = "dist/src/cli/crawl.js";

export interface UsageRun {
  /** The code the command passed to process.exit. */
  code: number | null;
  stderr: string;
}

// Each run imports the entry point as a module instance of its own (a query string in its URL), so its
// own code runs as `node dist/src/cli/crawl.js <args>` would: process.argv is set first, process.exit and
// stderr are caught. The modules it imports are loaded once and shared by the runs.
const SCRIPT = `
import { pathToFileURL } from "node:url";
const [, entry, json] = process.argv;
const runs = JSON.parse(json);
const exit = process.exit.bind(process);
const write = process.stderr.write.bind(process.stderr);
const results = [];
for (const [i, args] of runs.entries()) {
  let stderr = "";
  process.stderr.write = (chunk) => { stderr += String(chunk); return true; };
  const code = await new Promise((resolve) => {
    process.exit = (c) => resolve(c ?? 0);
    process.argv = [process.execPath, entry, ...args];
    import(pathToFileURL(entry).href + "?run=" + i).catch((err) => { stderr += "import failed: " + err; resolve(null); });
  });
  results.push({ code, stderr });
}
process.stderr.write = write;
process.stdout.write(JSON.stringify(results), () => exit(0));
`;

/**
 * Run the built `crawl` once per argument list, one after the other in one node process: for command lines
 * refused before any crawl starts (usage errors), where starting node and loading the crawler for each
 * would cost far more than the run itself. Each result is the code the command exited with and what it
 * wrote to stderr. A run that does not end (one that would crawl) fails them all by `timeoutMs`.
 */
export function crawlUsageRuns(argvs: string[][], timeoutMs = 60_000): Promise<UsageRun[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", SCRIPT, ENTRY, JSON.stringify(argvs)], { cwd: ROOT });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`usage runs ended with ${signal ?? code}: ${stderr.slice(-2000)}`));
      else resolve(JSON.parse(stdout) as UsageRun[]);
    });
  });
}
