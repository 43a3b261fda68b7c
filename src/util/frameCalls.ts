import { errorMessage, logger } from "../log/logger.js";

/**
 * Calls into a page's frames. A frame may go at any moment (an ad slot taken down, a frame navigated away),
 * and puppeteer refuses a call on a frame already detached by throwing at once rather than by rejecting: a
 * caller that maps frames to calls inside Promise.allSettled sees that throw escape it, and the whole page
 * fails. A frame's failure is that frame's: here every failure is a rejection, settled per frame.
 */

/** What the helpers need of a frame (puppeteer's Frame; a test's stand-in). */
export interface FrameLike {
  url(): string;
}

/** `call(frame)`, rejected when it throws before giving its promise (a frame already detached) as when it rejects. */
export function callInFrame<F extends FrameLike, T>(frame: F, call: (frame: F) => Promise<T>): Promise<T> {
  try {
    return call(frame);
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Where a skipped frame's debug line goes, and what it says was skipped (`${what} skipped in a frame`). */
export interface FrameSkipLog {
  context: string;
  what: string;
  /** The page's URL. */
  url: string;
}

/**
 * `call` in each frame at once, each settled in the order of `frames`. A frame that fails (gone, navigated
 * away, its script threw) is skipped with a debug line; the others are not held up.
 */
export async function callInEachFrame<F extends FrameLike, T>(frames: readonly F[], call: (frame: F) => Promise<T>, log: FrameSkipLog): Promise<PromiseSettledResult<T>[]> {
  const settled = await Promise.allSettled(frames.map((frame) => callInFrame(frame, call)));
  settled.forEach((result, i) => {
    if (result.status === "rejected") logger.debug(log.context, `${log.what} skipped in a frame`, { url: log.url, frameUrl: frames[i].url(), error: errorMessage(result.reason) });
  });
  return settled;
}
