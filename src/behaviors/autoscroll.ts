import type { Frame, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { nudgeInPage, scrollStepInPage, shapeChangeInPage, type ScrollShape } from "./autoscrollInPage.js";
import { timerWatchScript } from "./autoscrollTimers.js";
import { requestKey, RequestWatch, type IgnoredPaths } from "./requestWatch.js";

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
  /** The answers to the page's script-made requests, each new to the page or not (the page's capture notes them). */
  answers?: ScriptAnswers;
}

/** The answers to a page's script-made requests whose bodies arrived since a moment, each new to the page or a repeat. */
export interface ScriptAnswers {
  since(since: number): readonly { url: string; novel: boolean }[];
}

/**
 * Why a frame's scrolling ended ("did not grow": its first scroll or click brought nothing; "grows by itself":
 * it grew again while left alone, as a ticker does: scrolling it would never end; "repeats itself": it grew by
 * answers the page had already got, a feed giving a batch it gave before, so it has no more to give).
 */
export type AutoscrollEnd = "stopped growing" | "repeats itself" | "did not grow" | "grows by itself" | "round limit" | "deadline" | "nothing to scroll" | "site-specific behavior" | "frame gone";

export interface FrameAutoscroll {
  frameUrl: string;
  /** Times the frame grew after a step. */
  rounds: number;
  /** Viewport moves made, all steps and nudges together. */
  moves: number;
  end: AutoscrollEnd;
  seconds: number;
}

/** Whether a frame's scrolling was cut by the behaviors' deadline: the page's behaviors timed out. */
export function cutByDeadline(results: readonly FrameAutoscroll[]): boolean {
  return results.some((result) => result.end === "deadline");
}

/** Ends after which the frame was left with nothing it set off pending and its requests ended. */
const SETTLED_ENDS: ReadonlySet<AutoscrollEnd> = new Set(["stopped growing", "repeats itself", "did not grow", "nothing to scroll"]);

/** Whether every frame's scrolling ended with the frame settled (none gone, cut, or left to another behavior). */
export function leftSettled(results: readonly FrameAutoscroll[]): boolean {
  return results.length > 0 && results.every((result) => SETTLED_ENDS.has(result.end));
}

/** Once nothing a step set off is pending, requests it started must have ended this long ago (rendered). */
const RESPONSE_SETTLE_MS = 150;
/** A frame that never settles (not rendered, no watch): growth is over after this long of a quiet network. */
const QUIET_MS = 500;
/** After the nudge, in a frame that never settles: the least wait before a quiet network ends it. */
const NUDGE_MIN_WAIT_MS = 200;
/** A step that brought no growth in this long is the end, even if requests go on (a page that polls). */
const MAX_GROWTH_WAIT_MS = 10_000;
/** A wait's end waits for the page's background requests then unanswered up to this long. */
const BACKGROUND_END_MS = 2000;
/** Each poll asks the page for up to this long whether it grew. */
const POLL_MS = 100;
/** After growth nothing of the step's caused, the frame is left alone this long at least, at most the second. */
const STILL_MS = [500, 3000] as const;
/** Moves per step (a viewport's in a frame without the watch): about 1,800,000 px of a 900 px viewport. */
const MAX_MOVES_PER_STEP = 2000;

/**
 * Once per tab, before its first page: what the autoscroll watches while it waits, the tab's requests
 * (from now on: a feed's first batch may be in flight when behaviors start) and each document's timers.
 */
export async function watchTabForAutoscroll(tab: Page): Promise<RequestWatch> {
  await tab.evaluateOnNewDocument(timerWatchScript());
  return RequestWatch.attach(tab);
}

/**
 * Scroll each frame to its end (concurrently), then log and return how each one ended. Once `stop` is
 * aborted (the behaviors' deadline), no frame is asked anything more: each ends at its next look.
 */
export async function autoscrollFrames(tab: Page, watch: RequestWatch, frames: readonly Frame[], limits: AutoscrollLimits, stop?: AbortSignal): Promise<FrameAutoscroll[]> {
  const results = await Promise.all(frames.map((frame) => autoscrollFrame(frame, watch, limits, stop)));
  for (const result of results) {
    if (result.end === "nothing to scroll" || result.end === "site-specific behavior") continue;
    logger.info("behaviorScript", "autoscroll ended", { url: tab.url(), ...result });
  }
  return results;
}

async function autoscrollFrame(frame: Frame, watch: RequestWatch, limits: AutoscrollLimits, stop?: AbortSignal): Promise<FrameAutoscroll> {
  const started = Date.now();
  let rounds = 0;
  let moves = 0;
  let lookedAgain = false;
  const result = (end: AutoscrollEnd): FrameAutoscroll => ({ frameUrl: frame.url(), rounds, moves, end, seconds: Math.round((Date.now() - started) / 100) / 10 });
  const over = () => stop?.aborted === true || Date.now() >= limits.deadline;
  // Once stopped, no answer from the page is awaited (a page busy in its own script answers late): the frame
  // ends at once, and what its last call does or throws later is dropped, not logged.
  const stopped = new Promise<never>((_, reject) => stop?.addEventListener("abort", () => reject(new Error("stopped")), { once: true }));
  stopped.catch(() => undefined);
  const ask = <T>(call: Promise<T>): Promise<T> => {
    call.catch(() => undefined);
    return stop ? Promise.race([call, stopped]) : call;
  };
  try {
    for (;;) {
      if (over()) return result("deadline");
      const stepStarted = Date.now();
      const step = await ask(frame.evaluate(scrollStepInPage, { maxMoves: MAX_MOVES_PER_STEP, budgetMs: Math.max(0, limits.deadline - Date.now()) }));
      if (step.siteSpecific) return result("site-specific behavior");
      if (step.hidden) return result("nothing to scroll");
      moves += step.moves;
      // A page no taller than its viewport, with nothing to click, is not waited on: once a poll has given
      // its scripts a rendered frame and it is quiet (its first batch may still be on its way, or just asked for).
      const short = rounds === 0 && !step.scrolled && !step.clicked;
      // After a click, more elements are growth too: a page that fits its viewport grows no taller.
      const byElements = step.clicked > 0;
      const waited = await ask(waitForGrowth(frame, step.before, watch, { since: stepStarted, movedAt: Date.now(), reactions: step.reactions }, limits.deadline, short ? POLL_MS : QUIET_MS, byElements, stop));
      let grew = waited.grew;
      if (short && !grew) {
        // Behaviors start as soon as the load's requests end: a feed's first batch may have arrived but not
        // be rendered yet when the step looked (a <div> that was not yet scrolling). Look once more, now quiet.
        if (!lookedAgain) {
          lookedAgain = true;
          continue;
        }
        return result("nothing to scroll");
      }
      // Before giving up: back a viewport and to the end again (a trigger that fired late, or was missed), on
      // a page that may have missed it: one that watches elements or reacted to the step. One that did
      // neither (most long pages: a book, a manual) is left at once.
      const reacted = waited.reactions > step.reactions;
      if (grew === false && !over() && (step.targets > 0 || reacted)) {
        const nudged = Date.now();
        // Only the areas that watch elements, unless the page reacted (a scroll listener's timeout: any area).
        moves += await ask(frame.evaluate(nudgeInPage, reacted));
        const again = await ask(waitForGrowth(frame, step.before, watch, { since: nudged, movedAt: Date.now(), reactions: waited.reactions }, limits.deadline, NUDGE_MIN_WAIT_MS, byElements, stop));
        grew = again.grew;
        waited.caused = again.caused;
        waited.shape = again.shape;
        waited.ignored = again.ignored;
      }
      if (grew === "deadline") return result("deadline");
      if (!grew) return result(rounds === 0 ? "did not grow" : "stopped growing");
      if (!waited.caused) {
        // Grown with no reaction to the step (no timeout, observer or request of the page's in reaction, no
        // request but its polls): a clock's doing, or a first batch rendering late. Left alone a while (as long
        // as that growth took, within STILL_MS): a page that grows again untouched is never done growing.
        const stillMs = Math.min(STILL_MS[1], Math.max(STILL_MS[0], 1.5 * (Date.now() - stepStarted)));
        if (await ask(growsUntouched(frame, waited.shape, Math.min(limits.deadline, Date.now() + stillMs)))) return result("grows by itself");
      }
      // Growth the step did not cause (the page rendering its first batch) is no round.
      if (step.scrolled || step.clicked) {
        rounds += 1;
        if (onlyRepeats(limits.answers?.since(stepStarted) ?? [], waited.ignored)) return result("repeats itself");
      }
      if (rounds >= limits.maxRounds) return result("round limit");
    }
  } catch (err) {
    if (stop?.aborted) return result("deadline");
    // Navigated away or detached: what it loaded so far is captured all the same.
    logger.debug("behaviorScript", `autoscroll stopped: ${errorMessage(err)}`, { frame: frame.url() });
    return result("frame gone");
  }
}

/**
 * Whether the step's answers (the page's own polls and clocks' requests left out) all repeated what the page had
 * already got: its growth is a batch it showed before. No answer at all says nothing.
 */
function onlyRepeats(answers: readonly { url: string; novel: boolean }[], ignored: IgnoredPaths): boolean {
  const caused = answers.filter((answer) => !ignored.has(requestKey(answer.url)));
  return caused.length > 0 && caused.every((answer) => !answer.novel);
}

/** Whether `now` has grown from `before`: taller, or (after a click) more elements. */
function grown(now: ScrollShape, before: ScrollShape, byElements: boolean): boolean {
  return now.page > before.page || now.areas > before.areas || (byElements && now.elements > before.elements);
}

/** Whether the frame grows taller than `from` before `until`, nothing moved meanwhile. */
async function growsUntouched(frame: Frame, from: ScrollShape, until: number): Promise<boolean> {
  let seen = from;
  while (Date.now() < until) {
    const poll = await frame.evaluate(shapeChangeInPage, seen, until - Date.now(), false);
    if (grown(poll.shape, from, false)) return true;
    seen = poll.shape;
  }
  return false;
}

interface GrowthWait {
  grew: boolean | "deadline";
  /** The page's reaction count when the wait ended. */
  reactions: number;
  /** Whether the growth can be the step's doing: the page reacted, or requested what no clock of it does. */
  caused: boolean;
  /** The frame's shape when the wait ended. */
  shape: ScrollShape;
  /** The page's background paths and the paths its clocks request: none of their requests is the step's doing. */
  ignored: IgnoredPaths;
}

/**
 * Whether the frame grows from `before`, and the page's reaction count when the wait ended. Not once the
 * page has settled (nothing it set off in reaction to the step pending, two rendered frames after the last:
 * autoscrollInPage.ts) with no request started since `since` (the step's start) nor in flight, or with
 * those requests ended RESPONSE_SETTLE_MS ago. In a frame that never settles: not once it has not grown
 * after `minWaitMs` and the network has been quiet for QUIET_MS; and never after MAX_GROWTH_WAIT_MS.
 * The page's background paths (polls, beacons: autoscrollTimers.ts) are no activity: a page that polls
 * settles as one that does not.
 */
async function waitForGrowth(frame: Frame, before: ScrollShape, watch: RequestWatch, from: { since: number; movedAt: number; reactions: number }, deadline: number, minWaitMs: number, byElements: boolean, stop?: AbortSignal): Promise<GrowthWait> {
  const started = Date.now();
  let seen = before;
  let reactions = from.reactions;
  let clocked: IgnoredPaths = new Set();
  let background: IgnoredPaths = new Set();
  const ended = (grew: boolean | "deadline"): GrowthWait => ({
    grew,
    reactions,
    caused: reactions > from.reactions || watch.activeSince(from.since, clocked),
    shape: seen,
    ignored: new Set([...background, ...clocked]),
  });
  for (;;) {
    if (stop?.aborted) return ended("deadline");
    // Waits in the page for a change from what was last seen (a shrink is a change, not growth).
    const poll = await frame.evaluate(shapeChangeInPage, seen, Math.max(0, Math.min(POLL_MS, deadline - Date.now())), true, from.movedAt);
    reactions = poll.reactions;
    seen = poll.shape;
    background = new Set(poll.background);
    clocked = new Set(poll.clocked);
    if (grown(poll.shape, before, byElements)) return ended(true);
    if (Date.now() >= deadline) return ended("deadline");
    const waited = Date.now() - started;
    const done =
      (poll.settled && (!watch.activeSince(from.since, background) || watch.quietFor(RESPONSE_SETTLE_MS, background))) ||
      (waited >= minWaitMs && watch.quietFor(QUIET_MS, background)) ||
      waited >= MAX_GROWTH_WAIT_MS;
    if (!done) continue;
    // Not waited for, the page's background requests; but one on its way now may be what the page grows by
    // (a clock that fetched twice on its own is taken for a poll): those are answered first, and the page is
    // looked at once more.
    if (background.size && watch.unansweredOf(background, Date.now())) {
      const limit = Math.min(deadline, Date.now() + BACKGROUND_END_MS);
      const now = Date.now();
      while (watch.unansweredOf(background, now) && Date.now() < limit && !stop?.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
      // Given the time to render an answer (read, parsed, added), not only two frames.
      const last = await frame.evaluate(shapeChangeInPage, seen, Math.max(0, Math.min(2 * POLL_MS, deadline - Date.now())), false);
      seen = last.shape;
      reactions = last.reactions;
      if (grown(last.shape, before, byElements)) return ended(true);
    }
    return ended(false);
  }
}
