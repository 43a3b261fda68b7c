/** Reads of Linux /proc (and kill(0)): who a pid really is, so that a reused pid is never taken for the process we mean. */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { testSeams } from "./testSeams.js";

/** The process's argv, or null if it is gone, a zombie, or unreadable. */
export function processArgs(pid: number): string[] | null {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    if (raw === "") return null; // zombies and kernel threads have no command line
    return raw.replace(/\0$/, "").split("\0");
  } catch {
    return null;
  }
}

/**
 * When the process started, in clock ticks since boot (field 22 of /proc/<pid>/stat), or null if there is
 * no such process. A pid plus this value names one process: a pid reused later has another start time.
 */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces or ')': count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** This boot's id: a start time read before a reboot means nothing after it. */
export function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

/**
 * The pid namespace this process sees pids in ("pid:[4026531836]"), or null where /proc cannot say.
 * Test hook (TestSeams.pidNamespace): the process claims a namespace of that name instead (tests of
 * processes in different namespaces where `unshare --pid` is not allowed).
 */
export function pidNamespace(): string | null {
  const forTest = testSeams().pidNamespace();
  if (forTest) return `test:${forTest}`;
  try {
    return readlinkSync("/proc/self/ns/pid");
  } catch {
    return null;
  }
}

/**
 * Pids of the processes (other than this one) that have `arg` as one of their arguments. Matched in the
 * raw command line with a NUL, a space or an end on either side: processes that retitle themselves
 * (Chromium's zygotes and renderers) leave one space-separated string there instead of NUL-separated args.
 */
export function pidsWithArg(arg: string): number[] {
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let raw: string;
    try {
      raw = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    if (hasArg(raw, arg)) pids.push(pid);
  }
  return pids;
}

function hasArg(cmdline: string, arg: string): boolean {
  const isBoundary = (c: string | undefined) => c === undefined || c === "\0" || c === " ";
  for (let at = cmdline.indexOf(arg); at !== -1; at = cmdline.indexOf(arg, at + 1)) {
    if (isBoundary(cmdline[at - 1]) && isBoundary(cmdline[at + arg.length])) return true;
  }
  return false;
}

/** Whether a process with this pid exists (EPERM: it exists but belongs to another user). */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
