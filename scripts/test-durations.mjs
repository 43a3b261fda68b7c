#!/usr/bin/env node
// Writes test/durations.json, the seconds each test file takes, from the default reporter's output of a full run
// (its line per file gives the file's whole time, hooks included; a JSON report's start and end times leave out
// the beforeAll hooks, where most e2e files run their crawls):
//   npx vitest run > /tmp/run.log 2>&1; node scripts/test-durations.mjs /tmp/run.log
// vitest.config.ts starts the longest files first from it (a fresh CI machine has no duration cache of its own).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const report = process.argv[2];
if (!report) {
  console.error("usage: node scripts/test-durations.mjs <the default reporter's output of a full run>");
  process.exit(2);
}
const seconds = {};
// " ✓ e2e test/e2e/x.e2e.test.ts (8 tests) 197341ms", colours taken out.
const FILE_LINE = /^\s*[✓×❯]\s+(?:\S+\s+)?(test\/\S+\.test\.ts)\s+\(\d+ tests?[^)]*\)\s+(\d+)ms/;
for (const line of readFileSync(report, "utf8").replace(/\x1b\[[0-9;]*m/g, "").split("\n")) {
  const match = FILE_LINE.exec(line);
  if (!match) continue;
  const s = Math.round(Number(match[2]) / 1000);
  if (s >= 5) seconds[match[1]] = s;
}
if (!Object.keys(seconds).length) {
  console.error(`${report}: no line of the default reporter naming a test file and its time`);
  process.exit(1);
}
const sorted = Object.fromEntries(Object.entries(seconds).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])));
writeFileSync(join(root, "test/durations.json"), JSON.stringify(sorted, null, 2) + "\n");
console.log(`test/durations.json: ${Object.keys(sorted).length} files of 5 s or more`);
