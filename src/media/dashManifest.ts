import type { DashPlaylist } from "mpd-parser";
import { fetchableUrl, uniqueUrls, type StreamListing } from "./streamListing.js";

/**
 * What a DASH manifest lists (mpd-parser, video.js' parser, which expands SegmentTemplate, SegmentTimeline
 * and SegmentList into URLs): every representation's init and media segments (after keepOneRendition, one
 * per adaptation set), a SegmentBase representation's single file.
 */
export async function listDash(text: string, url: string): Promise<StreamListing> {
  const live = /<MPD[^>]*\btype\s*=\s*["']dynamic["']/.test(text);
  // mpd-parser expands every segment eagerly: a template that repeats "until the end" of a live stream begun
  // in 1970, or of a static one said to last a century, would make millions of URLs (Node aborts, uncatchable).
  const bound = segmentBound(text, live);
  if (bound > MAX_LISTED_SEGMENTS) throw new Error(`lists ${Number.isFinite(bound) ? `about ${Math.round(bound)}` : "an unbounded number of"} segments (at most ${MAX_LISTED_SEGMENTS} are listed)`);
  // Loaded with the first MPD (with its XML parser): a crawl without streams never pays for it.
  const { parse } = await import("mpd-parser");
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
    live,
    encryption: [...encryption],
  };
}

/** The most segments a manifest may list for the crawler to fetch itself: 55 hours of 2-second segments. */
export const MAX_LISTED_SEGMENTS = 100_000;

/**
 * How many segments mpd-parser would make of this MPD, at most (Infinity when that depends on the clock): a
 * SegmentTemplate with a @duration makes the presentation's length over it (a live one, as many as have
 * passed since its start); a SegmentTimeline makes each <S> 1 + @r (a negative @r: until the end).
 */
function segmentBound(text: string, live: boolean): number {
  const seconds = isoSeconds(/<MPD[^>]*\bmediaPresentationDuration\s*=\s*["']([^"']+)["']/.exec(text)?.[1]);
  let bound = 0;
  for (const [, attributes = ""] of text.matchAll(/<SegmentTemplate\b([^>]*)>/g)) {
    const duration = Number(/\bduration\s*=\s*["'](\d+(?:\.\d+)?)["']/.exec(attributes)?.[1] ?? 0);
    const timescale = Number(/\btimescale\s*=\s*["'](\d+)["']/.exec(attributes)?.[1] ?? 1);
    if (!duration) continue;
    if (live || seconds === null) return Infinity;
    bound += (seconds * timescale) / duration;
  }
  for (const [, repeat] of text.matchAll(/<S\b[^>]*?\br\s*=\s*["'](-?\d+)["']/g)) {
    const r = Number(repeat);
    if (r < 0) return Infinity;
    bound += r + 1;
  }
  return bound + (text.match(/<S\b/g) ?? []).length;
}

/** An ISO 8601 duration (PT1H2M3.5S, P1DT2H) in seconds; null when absent or unreadable. */
function isoSeconds(value: string | undefined): number | null {
  const match = value ? /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value.trim()) : null;
  if (!match) return null;
  const [, days = "0", hours = "0", minutes = "0", secs = "0"] = match;
  return Number(days) * 86400 + Number(hours) * 3600 + Number(minutes) * 60 + Number(secs);
}
