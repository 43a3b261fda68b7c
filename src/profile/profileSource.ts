import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { rulesOutsideACrawl } from "../fetch/connectionRules.js";
import { discard, plainFetch } from "../fetch/plainFetch.js";
import { errorMessage } from "../log/logger.js";
import { downloadObject } from "../upload/downloadObject.js";
import { readStoreSettings } from "../upload/storeSettings.js";
import { withTimeout } from "../util/deadline.js";

// Fetched before the seeds are known: the rules outside a crawl apply (a local server is allowed).
const BEFORE_THE_CRAWL = rulesOutsideACrawl();

/** A profile URL gets this long to download, and at most this many bytes. */
export const PROFILE_DOWNLOAD_TIMEOUT_MS = 300_000;
export const PROFILE_DOWNLOAD_MAX_BYTES = 1024 ** 3;

export class ProfileSourceError extends Error {}

/**
 * browsertrix-crawler's --profile is a path or an http(s) URL of a profile tar.gz (the Browsertrix service
 * passes a signed URL). A URL is fetched once, before the crawl, into a temporary file that every browser
 * of the process unpacks from (each launch, relaunches after a crash included); `dispose` removes it.
 * A path is used as it is; `@name` is a file in the upload storage (STORE_ENDPOINT_URL + STORE_PATH + name,
 * as browsertrix-crawler and the Browsertrix service name profiles), downloaded the same way.
 */
export async function localProfile(source: string, userAgent: string | null, env: NodeJS.ProcessEnv = process.env): Promise<{ path: string; dispose: () => void }> {
  if (!/^https?:\/\//i.test(source) && !source.startsWith("@")) return { path: source, dispose: () => undefined };
  const dir = mkdtempSync(join(tmpdir(), "crawl-profile-"));
  const path = join(dir, "profile.tar.gz");
  const dispose = () => rmSync(dir, { recursive: true, force: true });
  if (source.startsWith("@")) {
    try {
      await fromStore(source.slice(1), path, env);
    } catch (err) {
      dispose();
      throw new ProfileSourceError(`--profile ${source} cannot be fetched from the upload storage: ${errorMessage(err)}`);
    }
    return { path, dispose };
  }
  try {
    await withTimeout((async () => {
      const response = await plainFetch(source, { rules: BEFORE_THE_CRAWL, userAgent, timeoutMs: PROFILE_DOWNLOAD_TIMEOUT_MS, maxBytes: PROFILE_DOWNLOAD_MAX_BYTES });
      if (response.status !== 200) {
        discard(response.body);
        throw new Error(`HTTP ${response.status}`);
      }
      await pipeline(response.body, createWriteStream(path, { mode: 0o600 }));
    })(), PROFILE_DOWNLOAD_TIMEOUT_MS, `not downloaded within ${PROFILE_DOWNLOAD_TIMEOUT_MS / 1000}s`);
  } catch (err) {
    dispose();
    // The URL may be signed: its query (a credential) stays out of the message.
    throw new ProfileSourceError(`--profile ${withoutQuery(source)} cannot be fetched: ${errorMessage(err)}`);
  }
  return { path, dispose };
}

function withoutQuery(url: string): string {
  const at = url.search(/[?#]/);
  return at < 0 ? url : `${url.slice(0, at)}?...`;
}

async function fromStore(name: string, path: string, env: NodeJS.ProcessEnv): Promise<void> {
  const settings = readStoreSettings(env);
  if (!settings) throw new Error("STORE_ENDPOINT_URL is not set");
  await downloadObject(settings, name, path, PROFILE_DOWNLOAD_MAX_BYTES, PROFILE_DOWNLOAD_TIMEOUT_MS);
}
