import { parse, type DashPlaylist } from "mpd-parser";
import { fetchableUrl, uniqueUrls, type StreamListing } from "./streamListing.js";

/**
 * What a DASH manifest lists (mpd-parser, video.js' parser, which expands SegmentTemplate, SegmentTimeline
 * and SegmentList into URLs): every representation's init and media segments (after keepOneRendition, one
 * per adaptation set), a SegmentBase representation's single file.
 */
export function listDash(text: string, url: string): StreamListing {
  const manifest = parse(text, { manifestUri: url });
  const groups = Object.values(manifest.mediaGroups).flatMap((byGroup) => Object.values(byGroup).flatMap((byName) => Object.values(byName)));
  const playlists: DashPlaylist[] = [...manifest.playlists, ...groups.flatMap((rendition) => rendition.playlists ?? [])];
  const files: (string | null)[] = [];
  const encryption = new Set<string>();
  const segments: (string | null)[] = [];
  for (const playlist of playlists) {
    if (playlist.sidx) files.push(fetchableUrl(playlist.sidx.resolvedUri, url));
    for (const segment of playlist.segments) {
      if (segment.map) files.push(fetchableUrl(segment.map.resolvedUri, url));
      segments.push(fetchableUrl(segment.resolvedUri, url));
      files.push(segments[segments.length - 1]!);
    }
    for (const system of Object.keys(playlist.contentProtection ?? {})) encryption.add(system);
  }
  const video = manifest.playlists.find((p) => p.attributes.RESOLUTION)?.attributes;
  return {
    rendition: video?.RESOLUTION ? { width: video.RESOLUTION.width, height: video.RESOLUTION.height, bandwidth: video.BANDWIDTH ?? null } : null,
    playlists: [],
    files: uniqueUrls(files),
    segments: uniqueUrls(segments),
    // A dynamic MPD lists only the stream's current window (mpd-parser keeps no `type`).
    live: /<MPD[^>]*\btype\s*=\s*["']dynamic["']/.test(text),
    encryption: [...encryption],
  };
}
