/**
 * Chromium that dies with its crawler. puppeteer spawns the executable it is given, so it is given a
 * two-line script that asks the kernel for a parent-death signal (setpriv --pdeathsig, util-linux) and
 * then becomes Chromium (exec: same pid). If the crawler is killed, even with SIGKILL, the kernel kills
 * the browser; the browser's own children (zygotes, renderers, GPU) exit when it does.
 */
import { accessSync, constants, existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { logger } from "../log/logger.js";

const SETPRIV = "/usr/bin/setpriv";
let warned = false;

/** Single-quoted for /bin/sh. */
function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The executable to give puppeteer: a wrapper script written into `dir`, or `executablePath` itself
 * (with one warning per process) where that cannot work: not Linux, no setpriv, or `dir` mounted noexec.
 */
export function executableWithDeathSignal(executablePath: string, dir: string): string {
  const fallback = (why: string) => {
    if (!warned) {
      warned = true;
      logger.warn("browser", `Chromium will not die with the crawler if it is killed (${why}); the next crawl in this collection cleans up after it`);
    }
    return executablePath;
  };
  if (process.platform !== "linux") return fallback("not Linux");
  if (!existsSync(SETPRIV)) return fallback(`${SETPRIV} not found: install util-linux`);
  const wrapper = join(dir, "chromium-with-death-signal.sh");
  // The signal goes to setpriv's parent: the main thread of this process, which is the one that spawns.
  writeFileSync(wrapper, `#!/bin/sh\nexec ${SETPRIV} --pdeathsig KILL -- ${shellQuote(executablePath)} "$@"\n`, { mode: 0o700 });
  try {
    accessSync(wrapper, constants.X_OK); // fails on a noexec mount
  } catch {
    return fallback(`cannot run a script in ${dir}`);
  }
  return wrapper;
}
