/** What a manifest lists for the crawler to fetch, whatever its format (hlsPlaylist.ts, dashManifest.ts). */
export interface StreamListing {
  /** The kept video rendition, when the manifest says (an HLS master, a DASH MPD). */
  rendition: { width: number; height: number; bandwidth: number | null } | null;
  /** HLS media playlists to read next (the kept variant, its audio and subtitle renditions). */
  playlists: string[];
  /** Files fetched whole: init segments, media segments, keys; each once, in playing order. */
  files: string[];
  /** Which of `files` are media segments. */
  segments: string[];
  /** A live stream (no #EXT-X-ENDLIST, a dynamic MPD): it lists only its current window. */
  live: boolean;
  /** How its segments are encrypted, as found ("AES-128", "SAMPLE-AES com.apple.streamingkeydelivery", "cenc"...); empty when clear. */
  encryption: string[];
}

/** A URL the crawler may fetch (http or https), resolved against the manifest's; null for skd:, data: and the like. */
export function fetchableUrl(uri: string | undefined, base: string): string | null {
  if (!uri) return null;
  try {
    const url = new URL(uri, base);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/** Each value once, in first-seen order, nulls dropped. */
export function uniqueUrls(urls: Iterable<string | null>): string[] {
  const seen = new Set<string>();
  for (const url of urls) if (url) seen.add(url);
  return [...seen];
}
