import { readFileSync } from "node:fs";

function readVersion(): string {
  // Both src/version.ts (tests) and dist/src/version.js (built) sit a known depth below package.json.
  for (const rel of ["../package.json", "../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "warc-crawler" && pkg.version) return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return "0.0.0";
}

export const VERSION = readVersion();
export const SOFTWARE = `warc-crawler ${VERSION} (Chromium via puppeteer-core, warcio.js)`;
