// The functions with the most self time in the V8 CPU profiles (node --cpu-prof) of a directory, for
// benchmark JSON: where a run spent its CPU, without opening the profile in a viewer.
import { readdirSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileItem {
  /** "function file:line" */
  at: string;
  /** Share of all samples, in percent. */
  selfPercent: number;
  selfMs: number;
}

export function topSelfTime(dir: string, count: number): ProfileItem[] {
  const byFrame = new Map<string, number>();
  let total = 0;
  for (const name of readdirSync(dir).filter((n) => n.endsWith(".cpuprofile"))) {
    const profile = JSON.parse(readFileSync(join(dir, name), "utf8")) as CpuProfile;
    const frameOf = new Map<number, string>();
    for (const node of profile.nodes) {
      const { functionName, url, lineNumber } = node.callFrame;
      frameOf.set(node.id, `${functionName || "(anonymous)"} ${url ? `${basename(url)}:${lineNumber + 1}` : ""}`.trim());
    }
    profile.samples.forEach((id, i) => {
      const micros = profile.timeDeltas[i] ?? 0;
      const frame = frameOf.get(id) ?? "?";
      byFrame.set(frame, (byFrame.get(frame) ?? 0) + micros);
      total += micros;
    });
  }
  return [...byFrame.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([at, micros]) => ({ at, selfPercent: Math.round((micros / total) * 1000) / 10, selfMs: Math.round(micros / 1000) }));
}
