import { Locator, type Frame, type KeyInput, type Page } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withTimeout } from "../util/deadline.js";

/**
 * Chrome Recorder flows (--customBehaviors .json) run in the page's tab from the crawler side, as
 * browsertrix-crawler runs them (its flowbehavior.ts): on a page whose URL starts with the flow's navigate
 * URL (any page for steps recorded before one), main frame only, one step after another; each step may
 * wait 5 s for its element and is followed by a 0.5 s pause. A step that times out is skipped, four in a
 * row stop the flow; any other error stops it. Navigation, viewport and network-condition steps are not
 * replayed. The requests the steps cause go through the tab, so its capture archives them.
 */

/** One recorded step, as the Recorder writes it (only the fields the runner reads are typed). */
export interface FlowStep {
  type: string;
  /** Alternatives, each a selector or a list of selectors that pierce shadow roots / frames in turn. */
  selectors?: (string | string[])[];
  target?: string;
  value?: string;
  key?: string;
  x?: number;
  y?: number;
  offsetX?: number;
  offsetY?: number;
  expression?: string;
  name?: string;
  button?: string;
  duration?: number;
}

/** The steps of one page of a flow. */
export interface UserFlow {
  /** The file (and part, when a flow navigates more than once), for messages. */
  id: string;
  /** The page URL prefix it runs on; "" runs on every page. */
  url: string;
  steps: FlowStep[];
}

const STEP_TIMEOUT_MS = 5000;
const STEP_PAUSE_MS = 500;
const MAX_TIMEOUTS_IN_A_ROW = 4;
const KEY_PAUSE_MS = 100;

export type FlowEnd = "done" | "not-found" | "errored" | "timed-out";

/** The first flow for the page's URL (browsertrix-behaviors runs the first loaded site-specific match only), or none. */
export function flowFor(flows: readonly UserFlow[], pageUrl: string): UserFlow | undefined {
  return flows.find((flow) => pageUrl.startsWith(flow.url));
}

/** A Recorder selector (aria/, text/, xpath/, pierce/ or CSS; a list pierces shadow roots in turn) for puppeteer. */
export function puppeteerSelector(selector: string | readonly string[]): string {
  if (typeof selector !== "string") return selector.map((part) => puppeteerSelector(part)).join(" >>>> ");
  const quoted = (s: string) => `"${s.replace(/[\\"]/g, "\\$&")}"`;
  if (selector.startsWith("aria/")) return `::-p-aria(${quoted(selector.slice(5))})`;
  if (selector.startsWith("text/")) return `::-p-text(${quoted(selector.slice(5))})`;
  if (selector.startsWith("xpath/")) return `::-p-xpath(${quoted(selector.slice(6))})`;
  if (selector.startsWith("pierce/")) return `:scope >>> ${selector.slice(7)}`;
  return selector;
}

/** Run one flow in the tab until it ends or `deadline` (ms since the epoch) passes; logs its outcome. */
export async function runUserFlow(tab: Page, flow: UserFlow, pageUrl: string, deadline: number): Promise<FlowEnd> {
  const abort = new AbortController();
  let timedOut = false;
  let timer: NodeJS.Timeout | undefined;
  const cut = new Promise<"timed-out">((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
      resolve("timed-out");
    }, Math.max(0, deadline - Date.now()));
  });
  let done = 0;
  const steps = (async (): Promise<FlowEnd> => {
    let timeoutsInARow = 0;
    for (const step of flow.steps) {
      if (timedOut) return "timed-out";
      let result: string;
      try {
        result = (await runStep(tab, step, abort.signal)) ? "processed" : "not supported, ignoring";
        timeoutsInARow = 0;
      } catch (err) {
        if (timedOut) return "timed-out";
        if (!isTimeout(err)) {
          logger.warn("behavior", `flow step "${step.type}" errored, stopping: ${errorMessage(err)}`, { flow: flow.id, url: pageUrl, step: done + 1 });
          return "errored";
        }
        timeoutsInARow += 1;
        if (timeoutsInARow >= MAX_TIMEOUTS_IN_A_ROW) {
          logger.debug("behaviorScript", `flow step "${step.type}" - not found, stopping`, { flow: flow.id, url: pageUrl, step: done + 1 });
          return "not-found";
        }
        result = "not found, not stopping";
      }
      done += 1;
      logger.debug("behaviorScript", `flow step "${step.type}" - ${result}`, { flow: flow.id, url: pageUrl, step: done });
      await sleep(STEP_PAUSE_MS);
    }
    return "done";
  })();
  const end = await Promise.race([steps, cut]);
  clearTimeout(timer);
  abort.abort();
  // A step still under way after the deadline ends on the abort signal; its rejection is not news.
  steps.catch(() => undefined);
  const messages: Record<FlowEnd, string> = {
    done: "flow behavior finished",
    "not-found": "flow behavior stopped: elements not found",
    errored: "flow behavior stopped on an error",
    "timed-out": "flow behavior timed out",
  };
  logger.info("behavior", messages[end], { flow: flow.id, url: pageUrl, steps: done, of: flow.steps.length });
  return end;
}

/** False: a step kind not replayed. Throws a TimeoutError when the step's element does not show in time. */
async function runStep(tab: Page, step: FlowStep, signal: AbortSignal): Promise<boolean> {
  const frame = await frameOf(tab, step, signal);
  const located = () => Locator.race((step.selectors ?? []).map((s) => frame.locator(puppeteerSelector(s))))
    .setTimeout(STEP_TIMEOUT_MS).setEnsureElementIsInTheViewport(true);
  const offset = step.offsetX !== undefined && step.offsetY !== undefined ? { x: step.offsetX, y: step.offsetY } : undefined;
  const button = mouseButton(step.button);
  switch (step.type) {
    case "click":
    case "doubleClick":
      await located().click({ signal, count: step.type === "doubleClick" ? 2 : 1, button, delay: step.duration, offset });
      return true;
    case "hover":
      await located().hover({ signal });
      return true;
    case "change":
      await located().fill(step.value ?? "", { signal });
      return true;
    case "waitForElement":
      await located().wait({ signal });
      return true;
    case "keyDown":
    case "keyUp":
      // Key names are the Recorder's, which are puppeteer's (an unknown one is puppeteer's error: the flow stops).
      await withTimeout(step.type === "keyDown" ? tab.keyboard.down(step.key as KeyInput) : tab.keyboard.up(step.key as KeyInput), STEP_TIMEOUT_MS, "TimeoutError: key");
      await sleep(KEY_PAUSE_MS);
      return true;
    case "scroll":
      if (step.selectors) await located().setEnsureElementIsInTheViewport(false).scroll({ signal, scrollLeft: step.x ?? 0, scrollTop: step.y ?? 0 });
      else await withTimeout(frame.evaluate((x, y) => window.scroll(x, y), step.x ?? 0, step.y ?? 0), STEP_TIMEOUT_MS, "TimeoutError: scroll");
      return true;
    case "waitForExpression":
      await frame.waitForFunction(step.expression ?? "true", { timeout: STEP_TIMEOUT_MS, signal });
      return true;
    default:
      // navigate, setViewport, close, emulateNetworkConditions, customStep: not replayed.
      return false;
  }
}

/** The step's frame: the main one, or the frame whose URL is its `target`. */
async function frameOf(tab: Page, step: FlowStep, signal: AbortSignal): Promise<Frame> {
  if (!step.target || step.target === "main") return tab.mainFrame();
  return tab.waitForFrame(step.target, { timeout: STEP_TIMEOUT_MS, signal });
}

function mouseButton(button: string | undefined): "left" | "middle" | "right" | "back" | "forward" | undefined {
  const buttons = { primary: "left", auxiliary: "middle", secondary: "right", back: "back", forward: "forward" } as const;
  return button && button in buttons ? buttons[button as keyof typeof buttons] : undefined;
}

function isTimeout(err: unknown): boolean {
  return err instanceof Error && (err.name === "TimeoutError" || err.message.startsWith("TimeoutError"));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
