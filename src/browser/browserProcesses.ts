/**
 * The processes of one Chromium, found by its profile: the browser passes `--user-data-dir=<profile>` to
 * every process it starts (zygotes, renderers, GPU, utilities), so that argument names them all, and
 * only them.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, isAbsolute, join } from "node:path";
import { pidsWithArg } from "../util/procfs.js";

const PROFILE_PREFIX = "crawler-profile-";

/** A fresh, empty profile folder for one browser launch. */
export function createProfileDir(): string {
  return mkdtempSync(join(tmpdir(), PROFILE_PREFIX));
}

/** Whether `dir` looks like a folder createProfileDir made: the only kind cleanup ever deletes. */
export function isProfileDir(dir: string): boolean {
  return isAbsolute(dir) && basename(dir).startsWith(PROFILE_PREFIX) && !dir.split("/").includes("..");
}

export function removeProfileDir(dir: string): void {
  if (isProfileDir(dir)) rmSync(dir, { recursive: true, force: true });
}

/** Pids of the live processes of the Chromium that uses this profile. */
export function browserProcesses(profileDir: string): number[] {
  return pidsWithArg(`--user-data-dir=${profileDir}`);
}

/**
 * SIGKILL every process of the Chromium that uses this profile and wait (up to `waitMs`) until they are
 * gone. Returns the pids signalled and those still there at the deadline (e.g. another user's).
 */
export async function killBrowserProcesses(profileDir: string, waitMs = 5000): Promise<{ killed: number[]; remaining: number[] }> {
  const killed: number[] = [];
  const deadline = Date.now() + waitMs;
  for (;;) {
    // Scan again each round: a dying browser may have forked a last child between two scans.
    const found = browserProcesses(profileDir);
    for (const pid of found) {
      try {
        process.kill(pid, "SIGKILL");
        if (!killed.includes(pid)) killed.push(pid);
      } catch {
        // gone already, or not ours to kill (EPERM): reported as remaining if it stays
      }
    }
    if (found.length === 0) return { killed, remaining: [] };
    // A killed process is a zombie until reaped, and zombies have no command line: the scan skips them.
    const remaining = browserProcesses(profileDir);
    if (remaining.length === 0 || Date.now() >= deadline) return { killed, remaining };
    await new Promise((r) => setTimeout(r, 100));
  }
}
