import { serializeManifest } from "../wacz/manifest.js";
import type { ReplayAssets } from "./replayAssets.js";
import { startReplayServer, type ReplayServer } from "./replayServer.js";
import { missingLine, type WaczSet } from "./waczSet.js";

/** The multi-WACZ JSON ReplayWeb.page loads, named after the first source (ReplayWeb.page shows the name as the collection's). */
export function setManifestName(set: Pick<WaczSet, "members">): string {
  const first = set.members.find((m) => m.isSource) ?? set.members[0];
  return `${(first?.name ?? "set").replace(/\.wacz$/i, "")}.json`;
}

export interface ServedSet {
  server: ReplayServer;
  /** What to open in a browser: the app over the whole set. */
  appUrl: string;
  /** The multi-WACZ JSON the app loads. */
  manifestUrl: string;
}

/** A set laid out for ReplayWeb.page: the files served under /archives/, and the source it loads. */
export interface SetArchives {
  /** /archives/<name> -> local file. */
  files: Map<string, string>;
  /** Served from memory under /archives/: the multi-WACZ JSON listing the members. */
  inMemory: Record<string, { type: string; body: Buffer }>;
  /** What ReplayWeb.page loads, as a path on the server: /archives/<manifest>.json */
  sourcePath: string;
}

/**
 * Each member at /archives/<n>/<name>, and a multi-WACZ JSON listing them under the names their dependents'
 * relation.requires and revisits (WARC-Refers-To-Container) use, so ReplayWeb.page finds a revisit's
 * original in the WACZ that holds it.
 */
export function setArchives(set: Pick<WaczSet, "members">): SetArchives {
  const files = new Map<string, string>();
  const listed = set.members.map((member, i) => {
    const servedAs = `${i}/${member.name}`;
    files.set(servedAs, member.path);
    return { name: uniqueName(member.name, set.members.slice(0, i).map((m) => m.name)), location: new URL(`http://set/archives/${servedAs.split("/").map(encodeURIComponent).join("/")}`), hash: member.hash, size: member.size, crawlId: member.crawlId };
  });
  const manifestName = setManifestName(set);
  const manifest = Buffer.from(serializeManifest(listed, new URL(`http://set/archives/${encodeURIComponent(manifestName)}`)));
  return { files, inMemory: { [manifestName]: { type: "application/json", body: manifest } }, sourcePath: `/archives/${encodeURIComponent(manifestName)}` };
}

/** Serve a set as one collection: ReplayWeb.page's app at /, the set's files under /archives/. */
export async function serveSet(set: WaczSet, assets: Pick<ReplayAssets, "uiJs" | "swJs">, listen: { host: string; port: number }): Promise<ServedSet> {
  const archives = setArchives(set);
  const notice = set.missing.length ? ["Not in this replay (missing from the set):", ...set.missing.map(missingLine)] : undefined;
  const server = await startReplayServer(assets, (name) => archives.files.get(name) ?? null, { host: listen.host, port: listen.port, home: { notice }, inMemory: archives.inMemory });
  const manifestUrl = server.url + archives.sourcePath;
  return { server, appUrl: `${server.url}/?source=${encodeURIComponent(manifestUrl)}`, manifestUrl };
}

/** Two different files of one name (two collections named alike) are both served: the later one renamed. */
function uniqueName(name: string, before: string[]): string {
  if (!before.includes(name)) return name;
  const stem = name.replace(/\.wacz$/, "");
  for (let n = 2; ; n++) if (!before.includes(`${stem}-${n}.wacz`)) return `${stem}-${n}.wacz`;
}
