import { integer } from "../flagValues.js";
import { OptionsError } from "../optionsError.js";

export const CAPTURE_MODES = ["browser", "hybrid"] as const;
export type CaptureMode = (typeof CAPTURE_MODES)[number];

/**
 * --captureMode: whether every page is loaded in Chromium (browser), or only the pages a template's guard sends
 * there, the rest fetched and parsed without a browser (hybrid: docs/user-guide/hybrid-capture.md).
 */
export interface CaptureModeOptions {
  mode: CaptureMode;
  /** --hybridLearnPages: each template's first pages browsed and learned from, across all processes. */
  learnPages: number;
  /** --hybridVerifyEvery: the first page of a template the guard lets through, then one in N since its last verify page, is browsed and compared; 0 = never. */
  verifyEvery: number;
}

export interface RawCaptureModeFlags {
  captureMode?: string;
  hybridLearnPages?: string;
  hybridVerifyEvery?: string;
}

export const DEFAULT_LEARN_PAGES = 2;
export const DEFAULT_VERIFY_EVERY = 20;

/**
 * A hybrid crawl cannot give what only a rendered page has: screenshots (--screenshot) and links read by custom
 * selectors (--selectLinks) of pages it does not browse. Refused, rather than leaving them out of some pages.
 */
export function captureModeOptions(flags: RawCaptureModeFlags, others: { screenshots: number; customLinkSelectors: boolean }): CaptureModeOptions {
  const mode = flags.captureMode ?? "browser";
  if (!(CAPTURE_MODES as readonly string[]).includes(mode)) throw new OptionsError(`--captureMode must be one of ${CAPTURE_MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  const options = { mode: mode as CaptureMode, learnPages: integer("hybridLearnPages", flags.hybridLearnPages, DEFAULT_LEARN_PAGES, 1), verifyEvery: integer("hybridVerifyEvery", flags.hybridVerifyEvery, DEFAULT_VERIFY_EVERY, 0) };
  if (options.mode === "hybrid" && others.screenshots > 0) throw new OptionsError("--captureMode hybrid takes no screenshots of the pages it does not browse: drop --screenshot, or use --captureMode browser");
  if (options.mode === "hybrid" && others.customLinkSelectors) throw new OptionsError("--captureMode hybrid reads links as a[href] and area[href] on the pages it does not browse: drop --selectLinks, or use --captureMode browser");
  return options;
}
