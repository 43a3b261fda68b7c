// No tracked file may hold a merge-conflict marker line: a merge that left one must fail CI, not land.
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../../..");
// Built from parts so that this file does not itself hold a marker line.
const MARKER = new RegExp(`^(${"<".repeat(7)} |${"=".repeat(7)}$|${">".repeat(7)} |\\|{7} )`, "m");
const UNTRACKED_DIRS = new Set(["node_modules", "dist", ".cache", "crawls", ".git"]);

/** The tracked files (git ls-files); outside a git checkout, every file but build output and dependencies. */
function trackedFiles(): string[] {
  try {
    return execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).split("\0").filter(Boolean);
  } catch {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) {
          if (!UNTRACKED_DIRS.has(name)) walk(path);
        } else files.push(relative(ROOT, path));
      }
    };
    walk(ROOT);
    return files;
  }
}

describe("merge conflicts", () => {
  it("no tracked file holds a conflict marker line", () => {
    const files = trackedFiles();
    expect(files.length).toBeGreaterThan(50);
    const withMarkers: string[] = [];
    for (const file of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), "utf8");
      } catch {
        continue; // deleted in the work tree
      }
      if (text.includes("\0")) continue; // binary
      const match = MARKER.exec(text);
      if (match) withMarkers.push(`${file}:${text.slice(0, match.index).split("\n").length}`);
    }
    expect(withMarkers).toEqual([]);
  });
});
