import type { FlowStep, UserFlow } from "../behaviors/flowRunner.js";
import { OptionsError } from "./optionsError.js";

/**
 * Chrome DevTools Recorder exports ("user flows"), which browsertrix-crawler runs as custom behaviors.
 * As there, a flow is cut at each `navigate` step: the steps after one run on pages whose URL starts
 * with that step's URL; steps before any `navigate` run on every page. `setViewport` steps are dropped.
 */

/** Parse and check a flow file; bad input is an OptionsError of one line naming `source`. */
export function parseUserFlow(text: string, source: string): UserFlow[] {
  const fail = (why: string): never => {
    throw new OptionsError(`--customBehaviors ${source}: not a recorder flow: ${why}`);
  };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return fail(`bad JSON (${(err as Error).message.split("\n")[0]})`);
  }
  if (!isObject(json) || !Array.isArray(json.steps)) return fail("no \"steps\" list");
  if (!json.steps.length) return fail("\"steps\" is empty");
  const steps = json.steps.map((step, i) => checkStep(step, i, fail));
  const flows: UserFlow[] = [];
  let current: UserFlow | null = null;
  for (const step of steps) {
    if (step.type === "setViewport") continue;
    if (step.type === "navigate") {
      if (current) flows.push(current);
      const url = (step as FlowStep & { url?: unknown }).url;
      if (typeof url !== "string") return fail(`a navigate step without a "url"`);
      current = { id: flows.length ? `${source}_${flows.length + 1}` : source, url, steps: [] };
      continue;
    }
    current ??= { id: source, url: "", steps: [] };
    current.steps.push(step);
  }
  if (current) flows.push(current);
  // A flow of navigations only does nothing on any page: kept, as browsertrix-crawler keeps it.
  return flows;
}

function checkStep(step: unknown, index: number, fail: (why: string) => never): FlowStep {
  const where = `step ${index + 1}`;
  if (!isObject(step) || typeof step.type !== "string" || !step.type) return fail(`${where} has no "type"`);
  const { selectors } = step;
  if (selectors !== undefined) {
    const ok = Array.isArray(selectors) && selectors.length > 0
      && selectors.every((s) => typeof s === "string" || (Array.isArray(s) && s.length > 0 && s.every((p) => typeof p === "string")));
    if (!ok) fail(`${where} (${step.type}): "selectors" must be a list of selectors or of selector lists`);
  }
  if (["click", "doubleClick", "hover", "change", "waitForElement"].includes(step.type) && selectors === undefined) {
    fail(`${where} (${step.type}) has no "selectors"`);
  }
  if (step.type === "change" && typeof step.value !== "string") fail(`${where} (change) has no "value"`);
  if ((step.type === "keyDown" || step.type === "keyUp") && typeof step.key !== "string") fail(`${where} (${step.type}) has no "key"`);
  return step as unknown as FlowStep;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
