import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rulesOutsideACrawl } from "../fetch/connectionRules.js";
import { discard, plainFetch, readText } from "../fetch/plainFetch.js";
import { errorMessage } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";
import { OptionsError } from "./optionsError.js";

// Fetched before the seeds are known: the rules outside a crawl apply (a local server is allowed).
const BEFORE_THE_CRAWL = rulesOutsideACrawl();

const SEED_FILE_TIMEOUT_MS = 60_000;
const SEED_FILE_MAX_BYTES = 100_000_000;

/**
 * browsertrix-crawler's --seedFile (--urlFile) may be an http(s) URL (the Browsertrix service passes one
 * for an uploaded seed list): fetched once, before the crawl, into a temporary file read like a local one.
 * Returns the local path and a function that removes the copy.
 */
export async function localSeedFile(seedFile: string, userAgent: string | null): Promise<{ path: string; dispose: () => void }> {
  if (!/^https?:\/\//i.test(seedFile)) return { path: seedFile, dispose: () => undefined };
  let text: string;
  try {
    text = await withTimeout((async () => {
      const response = await plainFetch(seedFile, { rules: BEFORE_THE_CRAWL, userAgent, timeoutMs: SEED_FILE_TIMEOUT_MS, maxBytes: SEED_FILE_MAX_BYTES });
      if (response.status !== 200) {
        discard(response.body);
        throw new Error(`HTTP ${response.status}`);
      }
      return readText(response.body);
    })(), SEED_FILE_TIMEOUT_MS, `no answer within ${SEED_FILE_TIMEOUT_MS / 1000}s`);
  } catch (err) {
    throw new OptionsError(`--seedFile ${seedFile} cannot be fetched: ${errorMessage(err)}`);
  }
  const dir = mkdtempSync(join(tmpdir(), "crawl-seeds-"));
  const path = join(dir, "seeds.txt");
  writeFileSync(path, text);
  return { path, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}
