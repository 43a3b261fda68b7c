import type { StreamFormat } from "./manifestFormat.js";

/**
 * The limits a manifest was cut to, stored with it as WARC-JSON-Metadata: ReplayWeb.page (wabac.js) reads
 * `maxRes`/`maxBand` from there and cuts the manifest again with the same limits, so replay asks for
 * the rendition that was captured. `rewritten` marks a payload that is not the bytes served (as
 * browsertrix-crawler marks it).
 */
export interface RenditionLimits {
  maxRes: number;
  maxBand: number;
  rewritten: 1;
}

export interface KeptRendition {
  /** The manifest listing one rendition (per DASH adaptation set): what the page's player is served and replay serves. */
  text: string;
  limits: RenditionLimits;
}

type Rewrite = (text: string, opts: { save: Record<string, unknown> }) => string;
let rewriters: Promise<{ hls: Rewrite; dash: Rewrite }> | null = null;

/** wabac.js, the library ReplayWeb.page replays with, loaded when the first manifest is seen (it is large). */
function loadRewriters(): Promise<{ hls: Rewrite; dash: Rewrite }> {
  rewriters ??= import("@webrecorder/wabac").then((wabac) => ({ hls: wabac.rewriteHLS as Rewrite, dash: wabac.rewriteDASH as Rewrite }));
  return rewriters;
}

/**
 * A manifest cut to the one rendition replay will ask for, chosen by wabac.js' own rewriteHLS/rewriteDASH
 * (their capture-time limits: the largest rendition up to 860x480 or 1 Mbit/s): the code ReplayWeb.page
 * replays with, so capture and replay agree. Null when the manifest offers no choice (a media playlist,
 * one rendition): it is kept as served.
 */
export async function keepOneRendition(format: StreamFormat, text: string): Promise<KeptRendition | null> {
  if (!offersChoice(format, text)) return null;
  const { hls, dash } = await loadRewriters();
  const save: Record<string, unknown> = {};
  const rewritten = (format === "hls" ? hls : dash)(text, { save });
  if (rewritten === text || typeof save.maxRes !== "number" || typeof save.maxBand !== "number") return null;
  return { text: rewritten, limits: { maxRes: save.maxRes, maxBand: save.maxBand, rewritten: 1 } };
}

/** Whether the manifest lists more than one rendition to choose from (an HLS master, a DASH set of several representations). */
function offersChoice(format: StreamFormat, text: string): boolean {
  if (format === "hls") return (text.match(/^#EXT-X-STREAM-INF:/gm) ?? []).length > 1;
  // Any adaptation set with two representations (a rough count is enough: the rewrite decides the rest).
  return text.split(/<AdaptationSet[\s>]/).slice(1).some((set) => (set.split(/<\/AdaptationSet>/)[0]!.match(/<Representation[\s>]/g) ?? []).length > 1);
}
