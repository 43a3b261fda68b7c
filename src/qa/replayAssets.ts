import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

/** ReplayWeb.page's prebuilt UI and service worker, as served to the replay browser. */
export interface ReplayAssets {
  dir: string;
  uiJs: Buffer;
  swJs: Buffer;
}

const PACKAGE_NAME = "warc-crawler";
const FETCH_SCRIPT = join("scripts", "fetch-replay.sh");

/** The package's root (from src/ or dist/src/): the folder whose package.json names this package. */
export function packageRoot(from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === PACKAGE_NAME) return dir;
    if (dirname(dir) === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package root above ${from}`);
  }
}

const hasBoth = (dir: string): boolean => existsSync(join(dir, "ui.js")) && existsSync(join(dir, "sw.js"));

/**
 * Where ui.js and sw.js are: $REPLAYWEB_DIR if set (the Docker image sets it), else the checkout's
 * .cache/replaywebpage, which scripts/fetch-replay.sh fills from the replaywebpage npm package (run here
 * when the files are missing: `npm install replaywebpage` cannot be used, its install pulls Electron).
 */
export async function loadReplayAssets(env: NodeJS.ProcessEnv = process.env): Promise<ReplayAssets> {
  let dir = env.REPLAYWEB_DIR;
  if (dir) {
    if (!hasBoth(dir)) throw new Error(`REPLAYWEB_DIR=${dir} lacks ui.js and sw.js (scripts/fetch-replay.sh extracts them from the replaywebpage npm package)`);
  } else {
    const root = packageRoot();
    dir = join(root, ".cache", "replaywebpage");
    if (!hasBoth(dir)) {
      if (!existsSync(join(root, FETCH_SCRIPT))) throw new Error(`ReplayWeb.page's ui.js and sw.js are not in ${dir}: set REPLAYWEB_DIR`);
      await promisify(execFile)("bash", [join(root, FETCH_SCRIPT)], { cwd: root, timeout: 300_000 }).catch((err: unknown) => {
        throw new Error(`cannot get ReplayWeb.page (bash ${FETCH_SCRIPT}): ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  }
  return { dir, uiJs: readFileSync(join(dir, "ui.js")), swJs: readFileSync(join(dir, "sw.js")) };
}
