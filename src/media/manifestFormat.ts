/** The two adaptive streaming formats whose manifests the crawler reads: HLS playlists and DASH MPDs. */
export type StreamFormat = "hls" | "dash";

const HLS_TYPES = new Set(["application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl"]);
const DASH_TYPES = new Set(["application/dash+xml"]);
/** Manifests are text of a few kilobytes; anything larger than this is left as it came. */
export const MAX_MANIFEST_BYTES = 4_000_000;

/** Whether a response is likely an HLS playlist or a DASH manifest, by its Content-Type or its URL's extension. */
export function likelyManifest(url: string, mime: string): boolean {
  const type = mime.split(";")[0].trim().toLowerCase();
  const path = pathOf(url);
  return HLS_TYPES.has(type) || DASH_TYPES.has(type) || path.endsWith(".m3u8") || path.endsWith(".mpd");
}

/**
 * An HLS playlist or a DASH manifest, by its Content-Type or, as servers often send them as text/plain or
 * application/octet-stream, by its extension and first bytes; null for anything else.
 */
export function manifestFormat(url: string, mime: string, body: Uint8Array): StreamFormat | null {
  if (!body.length || body.length > MAX_MANIFEST_BYTES) return null;
  const type = mime.toLowerCase();
  const path = pathOf(url);
  // Every body the browser hands over passes here: only a likely manifest is decoded.
  const claimed = HLS_TYPES.has(type) || path.endsWith(".m3u8") ? "hls" : DASH_TYPES.has(type) || path.endsWith(".mpd") ? "dash" : null;
  if (!claimed) return null;
  const start = new TextDecoder().decode(body.subarray(0, 4096)).replace(/^\uFEFF/, "").trimStart();
  if (claimed === "hls") return start.startsWith("#EXTM3U") ? "hls" : null;
  return /<MPD[\s>]/.test(start) ? "dash" : null;
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname.toLowerCase();
  } catch {
    return "";
  }
}
