import { resolve } from "node:path";
import { Script } from "node:vm";
import { createParser } from "css-selector-parser";
import { DEFAULT_AUTOSCROLL_MAX_ROUNDS } from "../../behaviors/autoscroll.js";
import type { CustomBehaviorScript } from "../../behaviors/behaviors.js";
import { DEFAULT_LINK_SELECTORS, type LinkSelector } from "../../page/linkSelectors.js";
import type { LinkKinds } from "../../page/linkSelectors.js";
import { readLocalBehaviors } from "../customBehaviors.js";
import type { UserFlow } from "../../behaviors/flowRunner.js";
import { parseUserFlow } from "../recorderFlows.js";
import { integer } from "../flagValues.js";
import { OptionsError } from "../optionsError.js";

/** Where links come from and what behaviors may add (browsertrix-crawler's flag names). */
export interface LinkBehaviorOptions {
  /** --selectLinks (--linkSelector): the elements, in every frame, a page's links are read from. */
  selectLinks: LinkSelector[];
  /** --extractFormLinks, --extractFeedLinks (ours, both on unless --no-...): GET forms' and feeds' links, besides --selectLinks'. */
  linkKinds: LinkKinds;
  /** --clickSelector: what the autoclick behavior clicks. */
  clickSelector: string;
  /** --customBehaviors: behavior classes loaded into every page with the library's own. */
  customBehaviors: CustomBehaviorScript[];
  /** --customBehaviors .json files: Chrome Recorder flows, run from the crawler side in matching pages. */
  userFlows: UserFlow[];
  /** --alwaysAddBehaviorLinks: links behaviors add are queued whatever the scope (not if excluded). */
  alwaysAddBehaviorLinks: boolean;
  /** --autoscrollMaxRounds (ours): how many times the autoscroll behavior lets one frame grow. */
  autoscrollMaxRounds: number;
}

export interface RawLinkBehaviorFlags {
  selectLinks?: string[];
  extractFormLinks?: boolean;
  extractFeedLinks?: boolean;
  clickSelector?: string;
  /** Local files or folders: the crawl command has fetched URL and git sources into local copies. */
  customBehaviors?: string[];
  /** Local copy -> the URL or git source it was made from (set by the crawl command with the copies). */
  customBehaviorOrigins?: Record<string, string>;
  alwaysAddBehaviorLinks?: boolean;
  autoscrollMaxRounds?: string;
}

export const DEFAULT_CLICK_SELECTOR = "a";

const parseSelector = createParser();

function checkSelector(flag: string, selector: string): void {
  try {
    if (!selector) throw new Error("empty selector");
    parseSelector(selector);
  } catch (err) {
    throw new OptionsError(`${flag}: ${JSON.stringify(selector)} is not a valid CSS selector (${(err as Error).message.replace(/^css-selector-parser parse error: /, "")})`);
  }
}

/**
 * A --selectLinks entry as browsertrix-crawler reads it: `selector->property`, `selector->@attribute`,
 * or a bare selector (its elements' href). Entries are comma-separated, so a selector may hold no comma.
 */
export function parseLinkSelector(entry: string): LinkSelector {
  const [selector, value] = entry.split("->").map((part) => part.trim());
  checkSelector("--selectLinks", selector);
  if (value === undefined) return { selector, extract: "href", attrOnly: false };
  const attrOnly = value.startsWith("@");
  const extract = attrOnly ? value.slice(1) : value;
  if (!/^\S+$/.test(extract)) {
    throw new OptionsError(`--selectLinks: ${JSON.stringify(entry)} must be selector->property or selector->@attribute, got ${JSON.stringify(value)} after "->"`);
  }
  return { selector, extract, attrOnly };
}

export function linkBehaviorOptions(flags: RawLinkBehaviorFlags): LinkBehaviorOptions {
  const entries = (flags.selectLinks ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  const clickSelector = flags.clickSelector?.trim() ?? DEFAULT_CLICK_SELECTOR;
  checkSelector("--clickSelector", clickSelector);
  const files = (flags.customBehaviors ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean)
    .flatMap((source) => readLocalBehaviors(source, flags.customBehaviorOrigins?.[resolve(source)]));
  const customBehaviors = files.filter((file) => !file.flow);
  for (const script of customBehaviors) checkSyntax(script);
  const userFlows = files.filter((file) => file.flow).flatMap(({ source, contents }) => parseUserFlow(contents, source));
  return {
    selectLinks: entries.length ? entries.map(parseLinkSelector) : [...DEFAULT_LINK_SELECTORS],
    linkKinds: { forms: flags.extractFormLinks ?? true, feeds: flags.extractFeedLinks ?? true },
    clickSelector,
    customBehaviors,
    userFlows,
    alwaysAddBehaviorLinks: flags.alwaysAddBehaviorLinks ?? false,
    autoscrollMaxRounds: integer("autoscrollMaxRounds", flags.autoscrollMaxRounds, DEFAULT_AUTOSCROLL_MAX_ROUNDS, 1),
  };
}

/** A file that does not compile would break every page's behaviors: refused before the crawl (compiled, not run). */
function checkSyntax({ source, contents }: CustomBehaviorScript): void {
  try {
    new Script(`self.__bx_behaviors.load(${contents}\n);`, { filename: source });
  } catch (err) {
    throw new OptionsError(`--customBehaviors: ${source} is not a behavior class: ${(err as Error).message}`);
  }
}
