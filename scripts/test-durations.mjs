#!/usr/bin/env node
// Writes test/durations.json, the seconds each test file takes, from a vitest JSON report of a full run:
//   npx vitest run --reporter=default --reporter=json --outputFile.json=/tmp/run.json && node scripts/test-durations.mjs /tmp/run.json
// vitest.config.ts starts the longest files first from it (a fresh CI machine has no duration cache of its own).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const report = process.argv[2];
if (!report) {
  console.error("usage: node scripts/test-durations.mjs <vitest JSON report of a full run>");
  process.exit(2);
}
const { testResults } = JSON.parse(readFileSync(report, "utf8"));
const seconds = {};
for (const result of testResults) {
  // Reports name files by absolute path, possibly of another checkout: keep the part from test/ on.
  const file = relative(root, result.name).replace(/^.*?(?=test\/)/, "");
  const s = Math.round((result.endTime - result.startTime) / 1000);
  if (s >= 5) seconds[file] = s;
}
const sorted = Object.fromEntries(Object.entries(seconds).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
writeFileSync(join(root, "test/durations.json"), JSON.stringify(sorted, null, 2) + "\n");
console.log(`test/durations.json: ${Object.keys(sorted).length} files of 5 s or more`);
