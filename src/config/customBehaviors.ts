import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, extname, join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import type { CustomBehaviorScript } from "../behaviors/behaviors.js";
import { rulesOutsideACrawl } from "../fetch/connectionRules.js";
import { discard, plainFetch, readText } from "../fetch/plainFetch.js";
import { errorMessage } from "../log/logger.js";
import { gitProxyEnv } from "../proxy/activeProxies.js";
import { withTimeout } from "../util/deadline.js";
import { OptionsError } from "./optionsError.js";

// Fetched before the seeds are known: the rules outside a crawl apply (a local server is allowed).
const BEFORE_THE_CRAWL = rulesOutsideACrawl();

/**
 * --customBehaviors sources, as browsertrix-crawler takes them: a .js file (a behavior class) or a .json
 * Chrome Recorder flow (recorderFlows.ts), a folder of them (searched five levels deep, .git left out), an http(s) URL of one, or a git repository
 * `git+<url>[?branch=B&path=dir]` (cloned with the git command). URL and git sources are fetched once,
 * before the crawl, into a temporary folder read like a local one.
 */

const FETCH_TIMEOUT_MS = 60_000;
const CLONE_TIMEOUT_MS = 300_000;
const MAX_BEHAVIOR_BYTES = 10_000_000;
const MAX_DEPTH = 5;
/** Behavior classes (.js) and recorder flows (.json). */
const BEHAVIOR_EXTS = [".js", ".json"];

/** Local copies of URL and git sources: their paths, each copy's source (for messages), and their removal. */
export interface LocalBehaviorSources {
  paths: string[];
  origins: Record<string, string>;
  dispose: () => void;
}

/** The sources with URL and git ones replaced by local copies. */
export async function localCustomBehaviors(sources: readonly string[], userAgent: string | null): Promise<LocalBehaviorSources> {
  const entries = sources.flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  if (!entries.some(isRemote)) return { paths: [...sources], origins: {}, dispose: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), "crawl-behaviors-"));
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  try {
    const paths: string[] = [];
    const origins: Record<string, string> = {};
    for (const [i, source] of entries.entries()) {
      let path = source;
      if (source.startsWith("git+")) path = await cloneBehaviors(source, join(dir, `repo-${i}`));
      else if (/^https?:\/\//i.test(source)) path = await downloadBehavior(source, join(dir, `${i}-${fileNameOf(source)}`), userAgent);
      if (path !== source) origins[resolve(path)] = source;
      paths.push(path);
    }
    return { paths, origins, dispose };
  } catch (err) {
    dispose();
    throw err;
  }
}

function isRemote(source: string): boolean {
  return source.startsWith("git+") || /^https?:\/\//i.test(source);
}

function fileNameOf(url: string): string {
  const name = basename(new URL(url).pathname);
  return /^[\w.-]+$/.test(name) ? name : "behavior.js";
}

async function downloadBehavior(url: string, path: string, userAgent: string | null): Promise<string> {
  try {
    const text = await withTimeout((async () => {
      const response = await plainFetch(url, { rules: BEFORE_THE_CRAWL, userAgent, timeoutMs: FETCH_TIMEOUT_MS, maxBytes: MAX_BEHAVIOR_BYTES });
      if (response.status !== 200) {
        discard(response.body);
        throw new Error(`HTTP ${response.status}`);
      }
      return readText(response.body);
    })(), FETCH_TIMEOUT_MS, `no answer within ${FETCH_TIMEOUT_MS / 1000}s`);
    // A URL without .js or .json in its name is a behavior file all the same.
    const file = BEHAVIOR_EXTS.includes(extname(path)) ? path : `${path}.js`;
    writeFileSync(file, text);
    return file;
  } catch (err) {
    throw new OptionsError(`--customBehaviors ${url} cannot be fetched: ${errorMessage(err)}`);
  }
}

async function cloneBehaviors(source: string, dir: string): Promise<string> {
  const spec = source.slice("git+".length);
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new OptionsError(`--customBehaviors ${source}: not a git URL (git+https://host/repo.git?branch=B&path=dir)`);
  }
  const branch = url.searchParams.get("branch") ?? "";
  const subPath = url.searchParams.get("path") ?? "";
  url.search = "";
  // Credentials in the URL (user:password@, a token@) go to git as a header in its environment: on its
  // command line (and git-remote-https's) every local user would read them, and the clone would keep them.
  const gitConfig = gitConfigPairs(gitProxyEnv(url.href));
  if (url.username || url.password) {
    const basic = Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64");
    gitConfig.push(["http.extraHeader", `Authorization: Basic ${basic}`]);
    url.username = "";
    url.password = "";
  }
  const args = ["clone", "--depth", "1", ...(branch ? ["--branch", branch, "--single-branch"] : []), "--", url.href, dir];
  try {
    await promisify(execFile)("git", args, { timeout: CLONE_TIMEOUT_MS, env: { ...process.env, GIT_TERMINAL_PROMPT: "0", ...gitConfigEnv(gitConfig) } });
  } catch (err) {
    const message = errorMessage(err).split("\n").filter((l) => /fatal|error/i.test(l)).pop() ?? errorMessage(err).split("\n")[0];
    throw new OptionsError(`--customBehaviors ${source} cannot be cloned: ${message.trim()}`);
  }
  const path = resolve(dir, subPath);
  if (!path.startsWith(resolve(dir))) throw new OptionsError(`--customBehaviors ${source}: path= must stay inside the repository`);
  return path;
}

/** The GIT_CONFIG_KEY_n/VALUE_n pairs of a git environment. */
function gitConfigPairs(env: Record<string, string>): [string, string][] {
  const count = Number(env.GIT_CONFIG_COUNT ?? 0);
  return Array.from({ length: count }, (_, i): [string, string] => [env[`GIT_CONFIG_KEY_${i}`] ?? "", env[`GIT_CONFIG_VALUE_${i}`] ?? ""]);
}

function gitConfigEnv(pairs: [string, string][]): Record<string, string> {
  if (pairs.length === 0) return {};
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(pairs.length) };
  pairs.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${i}`] = key;
    env[`GIT_CONFIG_VALUE_${i}`] = value;
  });
  return env;
}

/**
 * The behavior files of a local source (a .js or .json file, or a folder searched for them). `origin` is the
 * URL or git source a local copy was made from: messages name it (and the file within a repository).
 */
export function readLocalBehaviors(source: string, origin?: string): CustomBehaviorScript[] {
  if (isRemote(source)) throw new OptionsError(`--customBehaviors ${source}: URL and git sources are fetched by the crawl command only`);
  const path = resolve(source);
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (err) {
    throw new OptionsError(`--customBehaviors ${source}: no such file or folder (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`);
  }
  if (!isDir) {
    if (!BEHAVIOR_EXTS.includes(extname(path))) throw new OptionsError(`--customBehaviors ${source}: not a .js behavior file or .json recorder flow`);
    return [readBehavior(path, origin ?? path)];
  }
  const found = filesIn(path, 0);
  if (!found.length) throw new OptionsError(`--customBehaviors ${origin ?? source}: no .js behavior files or .json flows in this folder`);
  return found.map((file) => readBehavior(file, origin ? `${origin} ${relative(path, file)}` : file));
}

function filesIn(dir: string, depth: number): string[] {
  if (depth >= MAX_DEPTH) return [];
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return entry.name === ".git" ? [] : filesIn(path, depth + 1);
      return entry.isFile() && BEHAVIOR_EXTS.includes(extname(entry.name)) ? [path] : [];
    });
}

function readBehavior(path: string, source: string): CustomBehaviorScript {
  try {
    const contents = readFileSync(path, "utf8");
    return extname(path) === ".json" ? { source, contents, flow: true } : { source, contents };
  } catch (err) {
    throw new OptionsError(`--customBehaviors ${source} cannot be read: ${errorMessage(err)}`);
  }
}
