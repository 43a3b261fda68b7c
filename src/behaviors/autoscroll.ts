import type { Frame, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { nudgeInPage, scrollStepInPage, shapeChangeInPage, type ScrollShape } from "./autoscrollInPage.js";
import { timerWatchScript } from "./autoscrollTimers.js";
import { RequestWatch } from "./requestWatch.js";

/**
 * Our autoscroll behavior, run in place of browsertrix-behaviors' one (which tests whether a page scrolls by
 * jumping to 98% of its height, so a feed's trigger at the very end never comes into view): in every frame,
 * scroll the window and each scrolling element to its end and click "load more" buttons, again and again
 * while the frame grows, until it stops growing with no request in flight, a round limit, or the deadline.
 * A frame where the library runs a site-specific behavior is left to it, as the library's autoscroll is.
 */

/** Default --autoscrollMaxRounds: a 3,000 px batch a round is 3,000,000 px. */
export const DEFAULT_AUTOSCROLL_MAX_ROUNDS = 1000;

export interface AutoscrollLimits {
  /** Epoch ms: the page's behavior deadline (--behaviorTimeout). */
  deadline: number;
  /** Stop after the frame has grown this many times (--autoscrollMaxRounds). */
  maxRounds: number;
}

/** Why a frame's scrolling ended. */
export type AutoscrollEnd = "stopped growing" | "round limit" | "deadline" | "nothing to scroll" | "site-specific behavior" | "frame gone";

export interface FrameAutoscroll {
  frameUrl: string;
  /** Times the frame grew after a step. */
  rounds: number;
  end: AutoscrollEnd;
  seconds: number;
}

/** Whether a frame's scrolling was cut by the behaviors' deadline: the page's behaviors timed out. */
export function cutByDeadline(results: readonly FrameAutoscroll[]): boolean {
  return results.some((result) => result.end === "deadline");
}

/** Growth is over once nothing grew and no request started or ended for this long. */
const QUIET_MS = 500;
/** After the nudge: quiet this long with no growth is the end. */
const NUDGE_QUIET_MS = 200;
/** A step that brought no growth in this long is the end, even if requests go on (a page that polls). */
const MAX_GROWTH_WAIT_MS = 10_000;
/** Each poll asks the page for up to this long whether it grew. */
const POLL_MS = 100;
/** Viewport moves per step, at two rendered frames each: about 1,800,000 px of a 900 px viewport. */
const MAX_MOVES_PER_STEP = 2000;

/**
 * Once per tab, before its first page: what the autoscroll watches while it waits, the tab's requests
 * (from now on: a feed's first batch may be in flight when behaviors start) and each document's timers.
 */
export async function watchTabForAutoscroll(tab: Page): Promise<RequestWatch> {
  await tab.evaluateOnNewDocument(timerWatchScript());
  return RequestWatch.attach(tab);
}

/** Scroll each frame to its end (concurrently), then log and return how each one ended. */
export async function autoscrollFrames(tab: Page, watch: RequestWatch, frames: readonly Frame[], limits: AutoscrollLimits): Promise<FrameAutoscroll[]> {
  const results = await Promise.all(frames.map((frame) => autoscrollFrame(frame, watch, limits)));
  for (const result of results) {
    if (result.end === "nothing to scroll" || result.end === "site-specific behavior") continue;
    logger.info("behaviorScript", "autoscroll ended", { url: tab.url(), ...result });
  }
  return results;
}

async function autoscrollFrame(frame: Frame, watch: RequestWatch, limits: AutoscrollLimits): Promise<FrameAutoscroll> {
  const started = Date.now();
  let rounds = 0;
  let lookedAgain = false;
  const result = (end: AutoscrollEnd): FrameAutoscroll => ({ frameUrl: frame.url(), rounds, end, seconds: Math.round((Date.now() - started) / 100) / 10 });
  try {
    for (;;) {
      const stepStarted = Date.now();
      const step = await frame.evaluate(scrollStepInPage, { maxMoves: MAX_MOVES_PER_STEP, budgetMs: Math.max(0, limits.deadline - Date.now()) });
      if (step.siteSpecific) return result("site-specific behavior");
      // A page no taller than its viewport, with nothing to click, is not waited on: once a poll has given
      // its scripts a rendered frame and it is quiet (its first batch may still be on its way, or just asked for).
      const short = rounds === 0 && !step.scrolled && !step.clicked;
      let grew = await waitForGrowth(frame, step.before, watch, stepStarted, limits.deadline, short ? POLL_MS : QUIET_MS);
      if (short && !grew) {
        // Behaviors start as soon as the load's requests end: a feed's first batch may have arrived but not
        // be rendered yet when the step looked (a <div> that was not yet scrolling). Look once more, now quiet.
        if (!lookedAgain) {
          lookedAgain = true;
          continue;
        }
        return result("nothing to scroll");
      }
      if (!grew) {
        // Before giving up: back a viewport and to the end again (a trigger that fired late, or was missed).
        const nudged = Date.now();
        await frame.evaluate(nudgeInPage);
        // The nudge's transitions start any request they trigger within a frame or two: a shorter quiet
        // suffices to see one begin (then the wait goes on until it ends).
        grew = await waitForGrowth(frame, step.before, watch, nudged, limits.deadline, NUDGE_QUIET_MS, NUDGE_QUIET_MS);
      }
      if (grew === "deadline") return result("deadline");
      if (!grew) return result("stopped growing");
      // Growth the step did not cause (the page rendering its first batch) is no round.
      if (step.scrolled || step.clicked) rounds += 1;
      if (rounds >= limits.maxRounds) return result("round limit");
      if (Date.now() >= limits.deadline) return result("deadline");
    }
  } catch (err) {
    // Navigated away or detached: what it loaded so far is captured all the same.
    logger.debug("behaviorScript", `autoscroll stopped: ${errorMessage(err)}`, { frame: frame.url() });
    return result("frame gone");
  }
}

/**
 * True once the frame has grown from `before`. False at once when nothing happened: the page settled (no
 * short timer pending, two rendered frames after the last: autoscrollInPage.ts) with no request started
 * since `since` (the step's start) nor in flight (most pages, once scrolled to their end). Otherwise false
 * once it has not grown after `minWaitMs` and the network has been quiet for `quietMs` (a request that
 * ended may still be rendered), or after MAX_GROWTH_WAIT_MS whatever the network does.
 */
async function waitForGrowth(frame: Frame, before: ScrollShape, watch: RequestWatch, since: number, deadline: number, minWaitMs: number, quietMs = QUIET_MS): Promise<boolean | "deadline"> {
  const started = Date.now();
  let seen = before;
  // Once something did happen, the wait is the quiet one: asking again whether the page settled is no use.
  let mayEndEarly = true;
  for (;;) {
    // Waits in the page for a change from what was last seen (a shrink is a change, not growth).
    const poll = await frame.evaluate(shapeChangeInPage, seen, Math.max(0, Math.min(POLL_MS, deadline - Date.now())), mayEndEarly);
    const now = poll.shape;
    if (now.page > before.page || now.areas > before.areas) return true;
    seen = now;
    if (Date.now() >= deadline) return "deadline";
    if (mayEndEarly && poll.settled) {
      if (!watch.activeSince(since)) return false;
      mayEndEarly = false;
    }
    const waited = Date.now() - started;
    if ((waited >= minWaitMs && watch.quietFor(quietMs)) || waited >= MAX_GROWTH_WAIT_MS) return false;
  }
}
