import { readStoreSettings, StoreSettingsError } from "../upload/storeSettings.js";
import { exportWaczSet, ExportError } from "./exportSet.js";
import { loadReplayAssets } from "./replayAssets.js";
import { resolveWaczSet, ReplaySourceError, type ResolveOptions } from "./resolveSet.js";
import { serveSet } from "./serveSet.js";
import { unresolvedRevisits } from "./revisitCheck.js";
import { missingLine, unresolvedLine, type WaczSet } from "./waczSet.js";

/** Bad flags or a source that cannot be read at all: one line, exit 4. */
export class ReplayUsageError extends Error {}

export type ReplayMode = { kind: "list" } | { kind: "export"; file: string } | { kind: "serve"; host: string; port: number };

export interface ReplayOptions {
  sources: string[];
  mode: ReplayMode;
  /** http(s) base URLs to look for required WACZ files in. */
  from: string[];
  cwd: string;
  allowMissing: boolean;
}

export interface ReplayOutput {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Where required WACZ files are looked for: the collections under `cwd`, the S3 store of the STORE_* settings in `env`, `from`. */
export function searchPlaces(cwd: string, from: string[], env: NodeJS.ProcessEnv): ResolveOptions {
  try {
    return { cwd, from, store: readStoreSettings(env) };
  } catch (err) {
    if (err instanceof StoreSettingsError) throw new ReplayUsageError(err.message);
    throw err;
  }
}

/** Exit codes of `replay`: 0 done, 1 the set is incomplete (a WACZ missing or wrong), 4 bad usage or an unreadable source. */
const INCOMPLETE = 1;
const BAD_USAGE = 4;

/**
 * Resolve the sources into their set, then list, export or serve it. Serving lasts until SIGINT or SIGTERM
 * (or `stop`, when given: tests end it so).
 */
export async function runReplay(options: ReplayOptions, out: ReplayOutput, stop?: AbortSignal): Promise<number> {
  const places = searchPlaces(options.cwd, options.from, process.env);
  let set: WaczSet;
  try {
    set = await resolveWaczSet(options.sources, places);
  } catch (err) {
    if (err instanceof ReplaySourceError) throw new ReplayUsageError(err.message);
    throw err;
  }
  try {
    for (const missing of set.missing) out.stderr.write(`replay: ${missingLine(missing)}\n`);
    if (set.missing.length && !options.allowMissing) {
      out.stderr.write(`replay: ${set.missing.length} required WACZ file${set.missing.length === 1 ? "" : "s"} missing (--allowMissing opens what there is)\n`);
      return INCOMPLETE;
    }
    switch (options.mode.kind) {
      case "list":
        return await listSet(set, out);
      case "export":
        return await exportSet(set, options.mode.file, out);
      case "serve":
        return await serveUntilStopped(set, options.mode, out, stop);
    }
  } finally {
    await set.dispose();
  }
}

/** The set, one line per WACZ; then every revisit checked to resolve to a response in it (when nothing is missing). */
async function listSet(set: WaczSet, out: ReplayOutput): Promise<number> {
  for (const member of set.members) out.stdout.write(`${member.name} ${member.hash} ${member.size} ${member.where}\n`);
  if (set.missing.length) return INCOMPLETE;
  const unresolved = await unresolvedRevisits(set.members);
  for (const revisit of unresolved) out.stderr.write(`replay: ${unresolvedLine(revisit)}\n`);
  if (unresolved.length) out.stderr.write(`replay: ${unresolved.length} revisit record${unresolved.length === 1 ? "" : "s"} of the set resolve${unresolved.length === 1 ? "s" : ""} to no response in it\n`);
  return unresolved.length ? INCOMPLETE : 0;
}

async function exportSet(set: WaczSet, file: string, out: ReplayOutput): Promise<number> {
  // Only a whole set is exported (even with --allowMissing): a file that replays in part would hide it.
  if (set.missing.length) {
    out.stderr.write(`replay: --export writes only a whole set: ${set.missing.length} required WACZ file${set.missing.length === 1 ? " is" : "s are"} missing\n`);
    return INCOMPLETE;
  }
  let exported;
  try {
    exported = await exportWaczSet(set, file);
  } catch (err) {
    if (err instanceof ExportError) {
      out.stderr.write(`replay: ${err.message}\n`);
      return BAD_USAGE;
    }
    throw err;
  }
  const what = exported.format === "wacz" ? "one WACZ holding" : "a multi-WACZ JSON listing";
  out.stdout.write(`replay: wrote ${exported.path} (${exported.hash}, ${exported.size} bytes), ${what} ${exported.members.length} WACZ file${exported.members.length === 1 ? "" : "s"}: ${exported.members.map((m) => m.name).join(", ")}\n`);
  return 0;
}

async function serveUntilStopped(set: WaczSet, listen: { host: string; port: number }, out: ReplayOutput, stop?: AbortSignal): Promise<number> {
  const assets = await loadReplayAssets();
  const served = await serveSet(set, assets, listen);
  const missing = set.missing.length ? `, ${set.missing.length} missing` : "";
  out.stdout.write(`replay: ${set.members.length} WACZ file${set.members.length === 1 ? "" : "s"}${missing}: open ${served.appUrl}\n`);
  await new Promise<void>((done) => {
    const end = (): void => done();
    process.once("SIGINT", end);
    process.once("SIGTERM", end);
    stop?.addEventListener("abort", end, { once: true });
  });
  await served.server.close();
  return 0;
}
