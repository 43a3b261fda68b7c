import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { packageRoot } from "../util/packageRoot.js";

/** ReplayWeb.page's prebuilt UI and service worker, as served to the replay browser. */
export interface ReplayAssets {
  dir: string;
  uiJs: Buffer;
  swJs: Buffer;
}

const FETCH_SCRIPT = join("scripts", "fetch-replay.sh");

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
