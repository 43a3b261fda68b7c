import { readdirSync, readFileSync } from "node:fs";

/** Every process now: its command line (arguments joined by spaces) and its parent, by pid. */
export function processes(): Map<number, { line: string; parent: number }> {
  const found = new Map<number, { line: string; parent: number }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      found.set(Number(entry), { line: readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " "), parent });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Whether `pid` is `ancestor` or one of its descendants. */
export function descendsFrom(pid: number, ancestor: number, all: Map<number, { parent: number }>): boolean {
  for (let at = pid, steps = 0; at > 1 && steps < 50; at = all.get(at)?.parent ?? 0, steps++) if (at === ancestor) return true;
  return false;
}
