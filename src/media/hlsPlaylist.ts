import type { HlsManifest } from "m3u8-parser";
import { fetchableUrl, uniqueUrls, type StreamListing } from "./streamListing.js";

/**
 * What an HLS playlist lists (m3u8-parser, video.js' parser): a master playlist its variants and their audio,
 * subtitle and caption renditions (after keepOneRendition, one variant); a media playlist its init
 * segments (#EXT-X-MAP), media segments and AES-128 keys.
 */
export async function listHls(text: string, url: string): Promise<StreamListing> {
  // Loaded with the first playlist: a crawl without streams never pays for it.
  const { Parser } = await import("m3u8-parser");
  const parser = new Parser();
  parser.push(text);
  parser.end();
  const manifest = parser.manifest;
  return manifest.playlists?.length ? listMaster(manifest, url) : listMedia(manifest, url);
}

function listMaster(manifest: HlsManifest, base: string): StreamListing {
  const variants = manifest.playlists ?? [];
  const groups = manifest.mediaGroups ?? {};
  // The renditions the kept variants refer to: their AUDIO and SUBTITLES groups (every language of each).
  const wanted = new Set(variants.flatMap((v) => [v.attributes.AUDIO, v.attributes.SUBTITLES]).filter((g): g is string => Boolean(g)));
  const renditions = Object.entries(groups).flatMap(([type, byGroup]) =>
    Object.entries(byGroup).filter(([group]) => type !== "VIDEO" && wanted.has(group)).flatMap(([, byName]) => Object.values(byName).map((r) => r.uri)),
  );
  const first = variants[0]?.attributes;
  return {
    rendition: first?.RESOLUTION ? { width: first.RESOLUTION.width, height: first.RESOLUTION.height, bandwidth: first.BANDWIDTH ?? null } : null,
    playlists: uniqueUrls([...variants.map((v) => fetchableUrl(v.uri, base)), ...renditions.map((uri) => fetchableUrl(uri, base))]),
    files: [],
    segments: [],
    live: false,
    encryption: [],
  };
}

function listMedia(manifest: HlsManifest, base: string): StreamListing {
  const files: (string | null)[] = [];
  const encryption = new Set<string>();
  for (const segment of manifest.segments) {
    if (segment.key && segment.key.method !== "NONE") {
      encryption.add(segment.key.method);
      files.push(fetchableUrl(segment.key.uri, base)); // an AES-128 key is a file the player fetches
    }
    if (segment.map) files.push(fetchableUrl(segment.map.uri, base));
    files.push(fetchableUrl(segment.uri, base));
  }
  // Keys with a KEYFORMAT (FairPlay, Widevine, PlayReady): a DRM licence, never a file to archive.
  for (const [system, info] of Object.entries(manifest.contentProtection ?? {})) {
    encryption.add([info.attributes?.METHOD, info.attributes?.KEYFORMAT ?? system].filter(Boolean).join(" "));
  }
  return {
    rendition: null,
    playlists: [],
    files: uniqueUrls(files),
    segments: uniqueUrls(manifest.segments.map((s) => fetchableUrl(s.uri, base))),
    live: !manifest.endList,
    encryption: [...encryption],
  };
}
