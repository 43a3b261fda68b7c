import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Frame, Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";
import { callInEachFrame } from "../util/frameCalls.js";
import { IN_PAGE_SCRIPT_NAMES, namedScript } from "../util/requestInitiators.js";
import { autoscrollFrames, cutByDeadline, leftSettled, DEFAULT_AUTOSCROLL_MAX_ROUNDS, watchTabForAutoscroll, type ScriptAnswers } from "./autoscroll.js";
import { deferredTimersInPage, TIMER_WATCH_KEY, withUnwatchedTimers } from "./autoscrollTimers.js";
import { driveLibraryBehaviors, sweepAutofetch } from "./libraryBehaviors.js";
import { pressPlayControls } from "./mediaStart.js";
import type { RequestWatch } from "./requestWatch.js";
import { flowFor, runUserFlow, type UserFlow } from "./flowRunner.js";

/**
 * In-page behaviors from the browsertrix-behaviors package (scrolling, autoplay, fetching every srcset
 * candidate and lazy source): injected into every frame of a tab, run after each page's load wait.
 * Their requests go through the tab's network like any other, so the tab's capture archives them.
 */

/** browsertrix-crawler's behavior names (its --behaviors flag). */
export const BEHAVIOR_NAMES = ["autoscroll", "autoplay", "autofetch", "siteSpecific", "autoclick"] as const;
export type BehaviorName = (typeof BEHAVIOR_NAMES)[number];
/** What runs when --behaviors is not given (browsertrix-crawler's default: all but autoclick). */
export const DEFAULT_BEHAVIORS: readonly BehaviorName[] = ["autoscroll", "autoplay", "autofetch", "siteSpecific"];

export interface BehaviorSettings {
  /** Empty: nothing is injected or run. */
  enabled: readonly BehaviorName[];
  /** How long the behaviors of one page may run. */
  timeoutMs: number;
  /** Sleep this long after the load wait, before the behaviors. */
  postLoadDelayMs: number;
  /** --clickSelector: the elements the autoclick behavior clicks (absent: browsertrix's "a"). */
  clickSelector?: string;
  /** --customBehaviors: behavior classes (JavaScript class expressions), loaded after the library's own. */
  customScripts?: readonly CustomBehaviorScript[];
  /** --customBehaviors .json Recorder flows: run from the crawler side (flowRunner.ts), with siteSpecific. */
  userFlows?: readonly UserFlow[];
  /** --autoscrollMaxRounds: how many times our autoscroll lets a frame grow (autoscroll.ts). */
  autoscrollMaxRounds?: number;
}

/** One custom behavior file: where it came from (for messages) and its JavaScript (or a recorder flow's JSON). */
export interface CustomBehaviorScript {
  source: string;
  contents: string;
  /** A .json Chrome Recorder flow (config/recorderFlows.ts), run from the crawler side (flowRunner.ts). */
  flow?: true;
}

/** What the behaviors hand back to the crawler while they run. */
export interface BehaviorHooks {
  /** A URL a behavior asks to be crawled (its addLink, or a link the autoclick behavior clicks). */
  addLink(url: string): void;
  /** Whether the autoclick behavior may click a link to this URL: once per crawl process. */
  claimClick(url: string): boolean;
}

/** How one page's behaviors ended. */
export interface BehaviorOutcome {
  outcome: "finished" | "timed-out";
  seconds: number;
  /** The main frame's behaviors that ended: ms from their start to their end, by the library's names. */
  eachMs?: Record<string, number>;
  /**
   * The page was left settled: the autoscroll ended in every frame with nothing the page set off pending and
   * no request of it in the air, no deferred work of the page had just run at the behaviors' end, and none it
   * waited for sent for more. A wait after the behaviors need only let what is in flight end: there is no more to
   * watch for.
   */
  settled?: boolean;
  /**
   * The behaviors brought more than the loaded page showed: a frame grew as it was scrolled (a feed, "load more"), a
   * site-specific behavior or a Recorder flow ran. A page captured without them (--captureMode hybrid) would lack it.
   */
  foundMore?: boolean;
}

/** Per-process counts for the stats file. */
export interface BehaviorTally {
  finished: number;
  timedOut: number;
  /** Seconds spent running behaviors, summed over pages. */
  seconds: number;
}

/** Parse a --behaviors value: comma-separated names; empty turns behaviors off. Throws naming unknown names. */
export function parseBehaviorList(value: string): BehaviorName[] {
  const names = value.split(",").map((n) => n.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(BEHAVIOR_NAMES as readonly string[]).includes(n));
  if (unknown.length) {
    throw new Error(`unknown behavior ${unknown.map((n) => JSON.stringify(n)).join(", ")}; known: ${BEHAVIOR_NAMES.join(", ")} (or "" for none)`);
  }
  return [...new Set(names)] as BehaviorName[];
}

/** A claimClick for BehaviorHooks: each URL once (browsertrix-crawler keeps this set for the whole crawl). */
export function clickClaims(): (url: string) => boolean {
  const clicked = new Set<string>();
  return (url) => {
    if (clicked.has(url)) return false;
    clicked.add(url);
    return true;
  };
}

export function emptyTally(): BehaviorTally {
  return { finished: 0, timedOut: 0, seconds: 0 };
}

export function addToTally(tally: BehaviorTally, outcome: BehaviorOutcome): void {
  if (outcome.outcome === "finished") tally.finished += 1;
  else tally.timedOut += 1;
  tally.seconds = Math.round((tally.seconds + outcome.seconds) * 10) / 10;
}

const READY_STATE_DEADLINE_MS = 5000;
/** After the deadline, a bound on the stopped autoscroll's end (it ends at once: autoscroll.ts awaits no page). */
const SCROLL_STOP_MS = 2000;
/**
 * At the behaviors' end, the page's deferred timeouts (autoscrollTimers.ts) due within this long are waited for:
 * work a page puts off "until a moment after it loaded" (a toolbar loaded 3 s after the page's scripts).
 */
const DEFERRED_WAIT_MS = 2500;
/** After the last of them is due: the time for its handler to run and send what it loads. */
const DEFERRED_MARGIN_MS = 100;
/** One that fired this recently may have sent for what has not reached the crawler yet (its events lag under load). */
const DEFERRED_FIRED_RECENTLY_MS = 500;

/** The page-side functions behaviors call (CDP bindings; the library looks them up by these names). */
const LOG_BINDING = "__bx_log";
const ADD_LINK_BINDING = "__bx_addLink";
/** Many links in one call (newer browsertrix-behaviors use it when the page has it): see linkBatch. */
const ADD_LINK_BATCH_BINDING = "__bx_addLinkBatch";
const CLICK_SET_BINDING = "__bx_addSet";

let libraryScript: string | null = null;

/** Tabs whose pages get our autoscroll (in place of the library's): its round limit, the tab's requests. */
const autoscrollTabs = new WeakMap<Page, { maxRounds: number; watch: RequestWatch }>();
/** Tabs whose pages get the autoplay: their players that wait for a click are pressed first. */
const mediaTabs = new WeakSet<Page>();
/** Tabs whose pages may run recorder flows: the flows. */
const flowTabs = new WeakMap<Page, readonly UserFlow[]>();

function behaviorsLibrary(): string {
  libraryScript ??= readFileSync(createRequire(import.meta.url).resolve("browsertrix-behaviors/dist/behaviors.js"), "utf8");
  return libraryScript;
}

/**
 * Inject the behaviors into every document the tab loads from now on (every frame), initialized with
 * the enabled ones. Once per tab, before its first page.
 */
export async function installBehaviors(tab: Page, settings: BehaviorSettings, hooks: BehaviorHooks): Promise<void> {
  if (!settings.enabled.length) return;
  await tab.exposeFunction(LOG_BINDING, (entry: unknown) => logBehaviorMessage(tab, entry));
  await tab.exposeFunction(ADD_LINK_BINDING, (url: unknown) => {
    if (typeof url === "string") hooks.addLink(url);
  });
  await tab.exposeFunction(ADD_LINK_BATCH_BINDING, (urls: unknown) => {
    for (const url of linkBatch(urls)) hooks.addLink(url);
  });
  // As in browsertrix-crawler: the link autoclick is about to click is a link of the page too.
  await tab.exposeFunction(CLICK_SET_BINDING, (url: unknown) => {
    if (typeof url !== "string") return true;
    if (/^https?:/.test(url)) hooks.addLink(url);
    return hooks.claimClick(url);
  });
  // As in browsertrix-crawler, a flow is a site-specific behavior: it runs only with those.
  if (settings.userFlows?.length && settings.enabled.includes("siteSpecific")) flowTabs.set(tab, settings.userFlows);
  if (settings.enabled.includes("autoplay")) mediaTabs.add(tab);
  if (settings.enabled.includes("autoscroll")) {
    autoscrollTabs.set(tab, { maxRounds: settings.autoscrollMaxRounds ?? DEFAULT_AUTOSCROLL_MAX_ROUNDS, watch: await watchTabForAutoscroll(tab) });
  }
  const init = {
    // Ours runs instead (autoscroll.ts): the library's never brings a feed's end into view.
    autoscroll: false,
    autoplay: settings.enabled.includes("autoplay"),
    autofetch: settings.enabled.includes("autofetch"),
    autoclick: settings.enabled.includes("autoclick"),
    siteSpecific: settings.enabled.includes("siteSpecific"),
    clickSelector: settings.clickSelector ?? "a",
    // Looked up by name as a global of the page; our own deadline decides "timed out".
    log: LOG_BINDING,
  };
  // With our autoscroll, the library's timers are not counted as the page's (autoscrollTimers.ts).
  const library = autoscrollTabs.has(tab) ? withUnwatchedTimers(behaviorsLibrary()) : behaviorsLibrary();
  await tab.evaluateOnNewDocument(namedScript(`${library}\n;self.__bx_behaviors.init(${JSON.stringify(init)});\n${customBehaviorsScript(settings.customScripts ?? [])}`, IN_PAGE_SCRIPT_NAMES.behaviors));
}

/**
 * The URLs of one __bx_addLinkBatch call: browsertrix-crawler's form, one string of URLs joined by blank
 * lines (a URL holds no line break: the URL parser drops them), or an array of URL strings.
 */
export function linkBatch(urls: unknown): string[] {
  const items = typeof urls === "string" ? urls.split("\n\n") : Array.isArray(urls) ? urls : [];
  return items.filter((url): url is string => typeof url === "string").map((url) => url.trim()).filter((url) => url.length > 0);
}

/** Load each custom behavior class into the library (it runs one whose isMatch() is true, with siteSpecific on). */
export function customBehaviorsScript(scripts: readonly CustomBehaviorScript[]): string {
  return scripts.map(({ source, contents }) => `try {\nself.__bx_behaviors.load(${contents}\n);\n} catch (e) { self.${LOG_BINDING} && self.${LOG_BINDING}({ type: "error", data: ${JSON.stringify(`custom behavior ${source} not loaded: `)} + e }); }\n`).join("");
}

/**
 * Run the behaviors in the page's frames until all finish or `timeoutMs` passes, then log the outcome.
 * After a timeout they may go on in the page until it is left; the caller's quiet-network wait is bounded.
 * Null (logged, not run) when the page's document never finished loading.
 */
export async function runBehaviors(tab: Page, url: string, timeoutMs: number, answers?: ScriptAnswers): Promise<BehaviorOutcome | null> {
  // The behaviors start at the document's load event: on a document that is still loading (its body cut
  // off, say; Chromium may report the navigation loaded all the same) they would only wait out the timeout.
  const readyState = await withTimeout(tab.mainFrame().evaluate(() => document.readyState), READY_STATE_DEADLINE_MS, "no answer").catch(errorMessage);
  if (readyState !== "complete") {
    logger.info("behavior", "behaviors skipped: the page did not finish loading", { url, readyState });
    return null;
  }
  const started = Date.now();
  const frames = tab.frames().filter((frame) => /^https?:/.test(frame.url()));
  const eachMs: Record<string, number> = {};
  const playing = mediaTabs.has(tab);
  // A frame may go while its behaviors run (an ad slot taken down): its behaviors end there, the page's go on.
  const libraryRuns = callInEachFrame(frames, async (frame) => {
    if (playing) await frame.evaluate(pressPlayControls).catch(() => 0); // players that wait for a click (mediaStart.ts)
    const times = await frame.evaluate(driveLibraryBehaviors);
    if (frame === tab.mainFrame()) Object.assign(eachMs, times);
  }, { context: "behavior", what: "the library's behaviors", url });
  // The page's URL now (a hash route may have moved it), as a flow's in-page isMatch() reads it.
  const flow = flowFor(flowTabs.get(tab) ?? [], tab.url());
  // A matching flow is the page's site-specific behavior: as there, it takes the autoscroll's place.
  const autoscroll = flow ? undefined : autoscrollTabs.get(tab);
  let scrollTimedOut = false;
  let scrollSettled = false;
  let scrollFound = false;
  // At the deadline the autoscroll is stopped and awaited: nothing of it may run on once the page is done.
  const stopScrolling = new AbortController();
  const scrolling = autoscroll
    ? [autoscrollFrames(tab, autoscroll.watch, frames, { deadline: started + timeoutMs, maxRounds: autoscroll.maxRounds, answers }, stopScrolling.signal).then((results) => {
        scrollTimedOut = cutByDeadline(results);
        scrollSettled = leftSettled(results);
        scrollFound = results.some((frame) => frame.rounds > 0 || frame.end === "site-specific behavior");
        // Our autoscroll (autoscroll.ts), under the name the library's (turned off) had, for the page timings.
        eachMs.Autoscroll = Date.now() - started;
      })]
    : [];
  let flowTimedOut = false;
  const flowing = flow ? [runUserFlow(tab, flow, url, started + timeoutMs).then((end) => {
    flowTimedOut = end === "timed-out";
    eachMs.UserFlow = Date.now() - started;
  })] : [];
  const runs = Promise.allSettled([libraryRuns, ...scrolling, ...flowing]);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<"timed-out">((resolve) => (timer = setTimeout(() => resolve("timed-out"), timeoutMs)));
  // An endless feed's scrolling ends at the deadline itself: timed out, whichever settles first.
  let raced = await Promise.race([runs.then(() => "finished" as const), deadline]);
  clearTimeout(timer);
  if (raced === "timed-out") {
    stopScrolling.abort();
    // Its frames end at once and log their end now, before the page is done.
    await withTimeout(Promise.allSettled(scrolling), SCROLL_STOP_MS, "still scrolling").catch(() => undefined);
  }
  if (raced === "finished" && !scrollTimedOut && !flowTimedOut) {
    const sweepStarted = Date.now();
    const left = started + timeoutMs - sweepStarted;
    // Over the frames the behaviors started in: some may be gone by now.
    const sweeping = callInEachFrame(frames, (frame) => frame.evaluate(sweepAutofetch, left), { context: "behavior", what: "autofetch sweep", url });
    const sweeps = await withTimeout(sweeping, left, "timed-out").catch(() => "timed-out" as const);
    // Fetches still under way when the page's behavior time ran out: the behaviors did not finish.
    if (sweeps === "timed-out" || sweeps.some((sweep) => sweep.status === "fulfilled" && sweep.value === "unfinished")) raced = "timed-out";
    else if (sweeps.some((sweep) => sweep.status === "fulfilled" && sweep.value !== null)) eachMs.AutofetchSweep = Date.now() - sweepStarted;
  }
  // What the page put off until a moment after its load, due soon, is waited for (autoscrollTimers.ts).
  const moreToCome = raced === "finished" && autoscroll ? await waitForDeferredWork(frames, autoscroll.watch, url, started + timeoutMs) : false;
  const outcome = scrollTimedOut || flowTimedOut ? "timed-out" : raced;
  const settled = outcome === "finished" && scrollSettled && !moreToCome;
  const result = { outcome, seconds: Math.round((Date.now() - started) / 100) / 10, eachMs, settled, foundMore: scrollFound || flow !== undefined };
  logger.info("behavior", outcome === "finished" ? "behaviors finished" : "behaviors timed out", { url, seconds: result.seconds, frames: frames.length });
  return result;
}

/**
 * Wait for the page's deferred timeouts (autoscrollTimers.ts) due within DEFERRED_WAIT_MS, within the behaviors'
 * deadline. Whether the page may load more: what they did sent for more, or one of them fired a moment before they
 * were read, so that its work may still be under way (what it sent for may not have reached us yet, and its answer's
 * handler may set the next timeout: a fetch a moment after the load, then another a moment after its answer).
 * Either way the quiet wait after the behaviors watches for what follows. (A request merely in the air is not enough:
 * the autoscroll ended with none of the page's own, and a busy page's polls and tickers never stop.)
 */
async function waitForDeferredWork(frames: readonly Frame[], watch: RequestWatch, url: string, deadline: number): Promise<boolean> {
  const due = await withTimeout(callInEachFrame(frames, (frame) => frame.evaluate(deferredTimersInPage, TIMER_WATCH_KEY, DEFERRED_WAIT_MS), { context: "behavior", what: "deferred timeouts", url }), READY_STATE_DEADLINE_MS, "no answer").catch(() => []);
  const read = due.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const answersToCome = read.some((timers) => timers.firedAgoMs !== null && timers.firedAgoMs < DEFERRED_FIRED_RECENTLY_MS);
  const soon = read.filter((timers) => timers.count > 0);
  const waitMs = Math.min(Math.max(0, ...soon.map((timers) => timers.lastInMs)), deadline - Date.now());
  if (!soon.length || waitMs <= 0) return answersToCome;
  const waitStarted = Date.now();
  logger.debug("behavior", "waiting for the page's deferred timeouts", { url, count: soon.reduce((sum, timers) => sum + timers.count, 0), ms: waitMs });
  await new Promise((resolve) => setTimeout(resolve, waitMs + DEFERRED_MARGIN_MS));
  // Work that sent for more (a toolbar's scripts) leaves the page loading; a timeout that fetched nothing does not.
  return answersToCome || watch.activeSince(waitStarted);
}

/** The library logs `{data, type}`: debug steps (scroll states), info and errors. */
function logBehaviorMessage(tab: Page, entry: unknown): void {
  try {
    const { data, type } = (typeof entry === "string" ? JSON.parse(entry) : entry) as { data?: unknown; type?: string };
    const message = typeof data === "string" ? data : JSON.stringify(data);
    const details = { url: tab.url() };
    // As browsertrix-crawler: the library's info messages are info lines (--logBehaviorsToRedis copies them).
    if (type === "error") logger.warn("behaviorScript", message, details);
    else if (type === "info") logger.info("behaviorScript", message, details);
    else logger.debug("behaviorScript", message, details);
  } catch (err) {
    logger.debug("behaviorScript", `unreadable behavior log message: ${errorMessage(err)}`);
  }
}
