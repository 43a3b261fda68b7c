/** The two adaptive streaming formats whose manifests the crawler reads: HLS playlists and DASH MPDs. */
export type StreamFormat = "hls" | "dash";

const HLS_TYPES = new Set(["application/vnd.apple.mpegurl", "application/x-mpegurl", "audio/mpegurl", "audio/x-mpegurl"]);
const DASH_TYPES = new Set(["application/dash+xml"]);
/** Manifests are text of a few kilobytes; anything larger than this is left as it came. */
export const MAX_MANIFEST_BYTES = 4_000_000;

/**
 * An HLS playlist or a DASH manifest, by its Content-Type or, as servers often send them as text/plain or
 * application/octet-stream, by its extension and first bytes; null for anything else.
 */
export function manifestFormat(url: string, mime: string, body: Uint8Array): StreamFormat | null {
  if (!body.length || body.length > MAX_MANIFEST_BYTES) return null;
  const type = mime.toLowerCase();
  const start = new TextDecoder().decode(body.subarray(0, 512)).replace(/^\uFEFF/, "").trimStart();
  if (HLS_TYPES.has(type) || (pathOf(url).endsWith(".m3u8") && start.startsWith("#EXTM3U"))) return start.startsWith("#EXTM3U") ? "hls" : null;
  if (DASH_TYPES.has(type) || pathOf(url).endsWith(".mpd")) return /<MPD[\s>]/.test(start) ? "dash" : null;
  return null;
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname.toLowerCase();
  } catch {
    return "";
  }
}
