import type { Page } from "puppeteer-core";
import { IN_PAGE_SCRIPT_NAMES, namedScript } from "../util/requestInitiators.js";

/** A selector the page's own scripts looked for, and whether the page holds a match once it is loaded. */
export interface QueriedSelector {
  selector: string;
  matched: boolean;
}

/** Where the watch keeps what it saw (a global symbol of the page, as the timer watch's). */
const QUERY_WATCH_KEY = "warc-crawler.queryWatch";
/** Selectors kept at most, and their longest: enough for a template's scripts, bounded for a page that builds them. */
const MAX_SELECTORS = 300;
const MAX_SELECTOR_LENGTH = 200;

/**
 * In the page, before its scripts run (puppeteer serializes it): what the page's own scripts look for in their
 * document. `querySelector(All)`, `matches` and `closest` by their selector, `getElementsByClassName` as `.name`,
 * `getElementById` as `#id`. Calls of the crawler's own scripts (the behaviors, the page watch, puppeteer's
 * evaluations: their `//# sourceURL` on the calling frame) are not the page's, and are left out.
 */
function queryWatchInPage(key: string, ownName: string, crawlerNames: string[], maxSelectors: number, maxLength: number): void {
  const CALLER_CHECKS = 3;
  const global = self as unknown as Record<symbol, unknown>;
  const symbol = Symbol.for(key);
  if (global[symbol]) return;
  const seen = new Set<string>();
  // Reading a stack is dear (the crawler's own scripts poll the same few selectors all along): each selector's caller
  // is read a few times at most.
  const checks = new Map<string, number>();
  const nativeQueryAll = Document.prototype.querySelectorAll;
  const note = (selector: unknown) => {
    if (typeof selector !== "string" || seen.size >= maxSelectors || selector.length > maxLength || seen.has(selector)) return;
    const checked = checks.get(selector) ?? 0;
    if (checked >= CALLER_CHECKS || checks.size >= 4 * maxSelectors) return;
    checks.set(selector, checked + 1);
    // Who called: the innermost frame past this watch's own (a page's timer callback runs inside the page watch's
    // wrapper, further out: still the page's call).
    const caller = (new Error().stack ?? "").split("\n").slice(1).find((line) => !line.includes(ownName)) ?? "";
    if (crawlerNames.some((name) => caller.includes(name))) return;
    seen.add(selector);
  };
  const wrap = (proto: object, name: string, toSelector: (arg: unknown) => unknown) => {
    const target = proto as Record<string, unknown>;
    const native = target[name];
    if (typeof native !== "function") return;
    const wrapped = {
      [name](this: unknown, ...args: unknown[]) {
        note(toSelector(args[0]));
        return (native as (...a: unknown[]) => unknown).apply(this, args);
      },
    }[name]!;
    Object.defineProperty(target, name, { value: wrapped, writable: true, configurable: true, enumerable: false });
  };
  const same = (arg: unknown) => arg;
  const classes = (arg: unknown) => (typeof arg === "string" && arg.trim() ? arg.trim().split(/\s+/).map((c) => `.${CSS.escape(c)}`).join("") : null);
  const id = (arg: unknown) => (typeof arg === "string" && arg ? `#${CSS.escape(arg)}` : null);
  for (const proto of [Document.prototype, Element.prototype, DocumentFragment.prototype]) {
    wrap(proto, "querySelector", same);
    wrap(proto, "querySelectorAll", same);
  }
  wrap(Element.prototype, "matches", same);
  wrap(Element.prototype, "closest", same);
  wrap(Document.prototype, "getElementsByClassName", classes);
  wrap(Element.prototype, "getElementsByClassName", classes);
  wrap(Document.prototype, "getElementById", id);
  const read = (): { selector: string; matched: boolean }[] =>
    [...seen].flatMap((selector) => {
      try {
        return [{ selector, matched: nativeQueryAll.call(document, selector).length > 0 }];
      } catch {
        return []; // not a selector the browser reads
      }
    });
  Object.defineProperty(global, symbol, { value: read });
}

/** Watch what the tab's pages' scripts look for (hybrid capture's learning pages): installed once per tab. */
export async function installQueryWatch(tab: Page): Promise<void> {
  const crawlerNames = [IN_PAGE_SCRIPT_NAMES.behaviors, IN_PAGE_SCRIPT_NAMES.pageWatch, "pptr:"];
  const args = [JSON.stringify(QUERY_WATCH_KEY), JSON.stringify(IN_PAGE_SCRIPT_NAMES.queryWatch), JSON.stringify(crawlerNames), MAX_SELECTORS, MAX_SELECTOR_LENGTH];
  await tab.evaluateOnNewDocument(namedScript(`(${queryWatchInPage.toString()})(${args.join(", ")});`, IN_PAGE_SCRIPT_NAMES.queryWatch));
}

/** What the page's scripts looked for in its main frame, and whether each matches now; [] without the watch. */
export async function queriedSelectors(tab: Page): Promise<QueriedSelector[]> {
  return tab.evaluate((key: string) => {
    const read = (self as unknown as Record<symbol, (() => { selector: string; matched: boolean }[]) | undefined>)[Symbol.for(key)];
    return read ? read() : [];
  }, QUERY_WATCH_KEY);
}
