// What a template's browsed pages fetched and linked beyond their documents, learned as what another page of the
// template will fetch and link: fixed URLs, rules made from the page's URL, volatile paths, and what cannot be known.

import { scriptIdentity } from "../static/templateKey.js";
import type { BrowsedObservation, LearnedTemplate } from "./templateTypes.js";

export type { LearnedTemplate } from "./templateTypes.js";

/** A page URL's part a rule may name, and its value in one page's URL. */
interface PagePart {
  placeholder: string;
  value: string;
}

/**
 * A single character (`a`, `1`) occurs by chance everywhere: never replaced. Two (`en`, `12`, a slug `a7`) are: a rule
 * only counts when two browsed pages make the identical rule string, and the verify pages check it.
 */
const MIN_PART_LENGTH = 2;
const BOUNDARIES = new Set(["/", "?", "=", "&", ".", "-", "_", "#"]);
/** A placeholder, or an escaped brace of the URL's own text. */
const RULE_TOKEN = /\{\{|\}\}|\{([^{}]+)\}/g;

function isBoundary(text: string, index: number): boolean {
  return index < 0 || index >= text.length || BOUNDARIES.has(text[index]!);
}

/** The first value of each query parameter of a URL, as written (percent-encoding kept). */
function rawQueryValues(url: URL): Map<string, string> {
  const values = new Map<string, string>();
  for (const pair of url.search.slice(1).split("&")) {
    if (!pair) continue;
    const equals = pair.indexOf("=");
    const name = equals < 0 ? pair : pair.slice(0, equals);
    if (!values.has(name) && !/[{}]/.test(name)) values.set(name, equals < 0 ? "" : pair.slice(equals + 1));
  }
  return values;
}

/**
 * The parts of a page URL a rule may name, as written in the URL: each path segment by position (`{segment1}` is the
 * first after the leading slash), the last segment's stem without its extension (`{stem}`), the whole path without
 * its leading slash (`{path}`), and each query parameter's value by name (`{query:id}`). A part equal to one listed
 * before it is left out, so one value has one name.
 */
function pageParts(page: URL): PagePart[] {
  const segments = page.pathname.split("/").slice(1);
  const parts: PagePart[] = segments.map((value, index) => ({ placeholder: `segment${index + 1}`, value }));
  const last = segments.at(-1) ?? "";
  const dot = last.lastIndexOf(".");
  if (dot > 0) parts.push({ placeholder: "stem", value: last.slice(0, dot) });
  if (segments.length > 1) parts.push({ placeholder: "path", value: page.pathname.slice(1) });
  for (const [name, value] of rawQueryValues(page)) parts.push({ placeholder: `query:${name}`, value });
  const seen = new Set<string>();
  return parts.filter((part) => {
    if (seen.has(part.value)) return false;
    seen.add(part.value);
    return true;
  });
}

function escapeBraces(text: string): string {
  return text.replace(/[{}]/g, (brace) => brace + brace);
}

/**
 * A URL as a rule string of the page that fetched or linked it: in its path, query and fragment (its origin stays as
 * written), each substring equal to a part of the page's URL of 2 or more characters and delimited by `/ ? = & . - _ #`
 * or the string's ends is replaced by the part's `{placeholder}`, longest parts first; braces of the URL's own text
 * are doubled. `hasPlaceholder` is false when no part was found.
 */
function ruleOf(url: URL, page: URL): { rule: string; hasPlaceholder: boolean } {
  const rest = url.pathname + url.search + url.hash;
  const origin = url.href.slice(0, url.href.length - rest.length);
  const parts = pageParts(page)
    .filter((part) => part.value.length >= MIN_PART_LENGTH)
    .sort((a, b) => b.value.length - a.value.length);
  const claimed: { start: number; end: number; placeholder: string }[] = [];
  for (const part of parts) {
    for (let start = rest.indexOf(part.value); start >= 0; start = rest.indexOf(part.value, start + 1)) {
      const end = start + part.value.length;
      if (!isBoundary(rest, start - 1) || !isBoundary(rest, end)) continue;
      if (claimed.some((c) => start < c.end && c.start < end)) continue;
      claimed.push({ start, end, placeholder: part.placeholder });
    }
  }
  claimed.sort((a, b) => a.start - b.start);
  let rule = escapeBraces(origin);
  let at = 0;
  for (const c of claimed) {
    rule += escapeBraces(rest.slice(at, c.start)) + `{${c.placeholder}}`;
    at = c.end;
  }
  rule += escapeBraces(rest.slice(at));
  return { rule, hasPlaceholder: claimed.length > 0 };
}

/** The value a placeholder stands for in a page URL; undefined when the URL has no such part, or it is empty. */
function placeholderValue(page: URL, placeholder: string): string | undefined {
  const segments = page.pathname.split("/").slice(1);
  let value: string | undefined;
  const segment = /^segment(\d+)$/.exec(placeholder);
  if (segment) value = segments[Number(segment[1]) - 1];
  else if (placeholder === "stem") {
    const last = segments.at(-1) ?? "";
    const dot = last.lastIndexOf(".");
    value = dot > 0 ? last.slice(0, dot) : undefined;
  } else if (placeholder === "path") value = segments.length > 1 ? page.pathname.slice(1) : undefined;
  else if (placeholder.startsWith("query:")) value = rawQueryValues(page).get(placeholder.slice("query:".length));
  return value ? value : undefined;
}

/** A rule filled in from a page URL, or why it cannot be. */
function fillRule(rule: string, page: URL): { url: string } | { underivable: string } {
  let missing: string | undefined;
  const filled = rule.replace(RULE_TOKEN, (token, placeholder: string | undefined) => {
    if (placeholder === undefined) return token[0]!;
    const value = placeholderValue(page, placeholder);
    if (value === undefined) missing ??= placeholder;
    return value ?? "";
  });
  if (missing !== undefined) return { underivable: `the rule ${rule} needs {${missing}}, which ${page.href} does not have` };
  try {
    return { url: new URL(filled).href };
  } catch {
    return { underivable: `the rule ${rule} makes no URL for ${page.href}` };
  }
}

function absoluteOrNull(url: string): string | null {
  try {
    return new URL(url).href;
  } catch {
    return null;
  }
}

interface Classified {
  fixed: string[];
  rules: string[];
  volatilePaths: string[];
  pageSpecific: string[];
}

/**
 * One kind of extra URL (fetches or links) of each browsed page, sorted into: fixed (every page's, the same URL, made
 * by its script or named by its document: `coveredLists`, what a static pass of each page has by itself),
 * rules (the same rule string from 2 pages, or from the one page when there is only one), volatile paths (when asked:
 * the same origin+path on every page with a query that differs) and the rest (page-specific).
 * With one page every URL of it is fixed or a rule: nothing can be seen to vary.
 */
function classify(urlLists: string[][], pages: URL[], withVolatile: boolean, coveredLists: readonly (readonly string[] | undefined)[] = []): Classified {
  const lists = urlLists.map((list) => [...new Set(list.map(absoluteOrNull).filter((u): u is string => u !== null))]);
  if (lists.length === 0) return { fixed: [], rules: [], volatilePaths: [], pageSpecific: [] };
  const single = lists.length === 1;
  const rulesOf = lists.map((list, i) => new Map(list.map((url) => [url, ruleOf(new URL(url), pages[i]!)])));
  // On a page: made by its script, or named by its document (which a static pass of any page reads for itself).
  const onPage = lists.map((list, i) => new Set([...list, ...(coveredLists[i] ?? [])]));
  const fixed = single
    ? lists[0]!.filter((url) => !rulesOf[0]!.get(url)!.hasPlaceholder)
    : [...new Set(lists.flat())].filter((url) => onPage.every((urls) => urls.has(url)));
  const fixedSet = new Set(fixed);
  const ruleObservations = new Map<string, Set<number>>();
  lists.forEach((list, i) => {
    for (const url of list) {
      const { rule, hasPlaceholder } = rulesOf[i]!.get(url)!;
      if (fixedSet.has(url) || !hasPlaceholder) continue;
      ruleObservations.set(rule, (ruleObservations.get(rule) ?? new Set()).add(i));
    }
  });
  const needed = Math.min(2, lists.length);
  const rules = [...ruleObservations].filter(([, seenIn]) => seenIn.size >= needed).map(([rule]) => rule).sort();
  const ruleSet = new Set(rules);
  const leftover = lists.map((list, i) => list.filter((url) => !fixedSet.has(url) && !ruleSet.has(rulesOf[i]!.get(url)!.rule)));
  const volatilePaths: string[] = [];
  if (withVolatile && !single) {
    const pathOf = (url: string) => {
      const parsed = new URL(url);
      return parsed.origin + parsed.pathname;
    };
    const candidates = new Set(leftover[0]!.map(pathOf));
    for (const path of candidates) {
      const urls = leftover.flatMap((list) => list.filter((url) => pathOf(url) === path));
      const onEveryPage = leftover.every((list) => list.some((url) => pathOf(url) === path));
      if (onEveryPage && new Set(urls).size > 1) volatilePaths.push(path);
    }
    volatilePaths.sort();
  }
  const volatileSet = new Set(volatilePaths);
  const pageSpecific = [...new Set(leftover.flat())].filter((url) => !volatileSet.has(new URL(url).origin + new URL(url).pathname)).sort();
  return { fixed, rules, volatilePaths, pageSpecific };
}

/**
 * What a template's browsed pages teach. Extra fetches and extra links are each sorted into:
 * - fixed: the same URL on every browsed page (by script, or named by that page's document: rustdoc's sidebar,
 *   made by script, links the items the page's own text links too);
 * - rules: a URL written with placeholders for the page URL's parts (see ruleOf), counted when at least 2 browsed
 *   pages made the identical rule string; with a single browsed page (learnPages 1) its one page is enough, and
 *   a URL of it is a rule when it holds a placeholder, fixed otherwise (the verify pages check the guess);
 * - volatile (fetches only): the same origin+path on every browsed page with a query that differs and no rule
 *   (beacons with timestamps, cache busters);
 * - page-specific: the rest, which a static pass cannot know.
 */
export function learnTemplate(observations: BrowsedObservation[]): LearnedTemplate {
  const pages = observations.map((o) => new URL(o.pageUrl));
  const fetches = classify(observations.map((o) => o.extraFetches), pages, true, observations.map((o) => o.staticFetches));
  const links = classify(observations.map((o) => o.extraLinks), pages, false, observations.map((o) => (o.staticLinks || o.foundLinks ? [...(o.staticLinks ?? []), ...(o.foundLinks ?? [])] : undefined)));
  const scripts = new Set<string>();
  for (const o of observations) for (const script of o.scripts) {
    const normalized = normalizedScript(script, o.pageUrl);
    if (normalized !== null) scripts.add(normalized);
  }
  return {
    observations: observations.length,
    scripts: [...scripts].sort(),
    fixedFetches: fetches.fixed,
    fetchRules: fetches.rules,
    volatilePaths: fetches.volatilePaths,
    pageSpecificFetches: fetches.pageSpecific,
    fixedLinks: links.fixed,
    linkRules: links.rules,
    pageSpecificLinks: links.pageSpecific,
    behaviorsFound: observations.some((o) => o.behaviorsFound),
    absentSelectors: absentSelectors(observations),
  };
}

/** Selectors the observations' scripts looked for that no observed document held. */
function absentSelectors(observations: BrowsedObservation[]): string[] {
  const present = new Set(observations.flatMap((o) => o.presentSelectors ?? []));
  return [...new Set(observations.flatMap((o) => o.absentSelectors ?? []))].filter((selector) => !present.has(selector)).sort();
}

/**
 * Whether a URL a page fetched or linked is made from the page's own URL, so that another page of the template would
 * fetch or link another one: written as a rule of the page (see ruleOf), it holds a placeholder, and filled in from one
 * of `otherPages` (the template's learning pages) it gives another URL or none. A URL made only from the parts every
 * page shares (the site's folder, `/book/img/...` under `/book/`) is the same on any page.
 */
export function madeFromPage(url: string, pageUrl: string, otherPages: readonly string[] = []): boolean {
  try {
    const { rule, hasPlaceholder } = ruleOf(new URL(url), new URL(pageUrl));
    if (!hasPlaceholder) return false;
    if (!otherPages.length) return true;
    const own = new URL(url).href;
    return otherPages.some((other) => {
      const filled = fillRule(rule, new URL(other));
      return "underivable" in filled || filled.url !== own;
    });
  } catch {
    return false;
  }
}

/** The template with what its verify pages showed it also fetches and links, the same URLs on any page (TemplateBook.verified). */
export function withAdopted(learned: LearnedTemplate, adopted: readonly { fetches: readonly string[]; links: readonly string[] }[]): LearnedTemplate {
  if (!adopted.length) return learned;
  return {
    ...learned,
    fixedFetches: [...new Set([...learned.fixedFetches, ...adopted.flatMap((a) => a.fetches)])],
    fixedLinks: [...new Set([...learned.fixedLinks, ...adopted.flatMap((a) => a.links)])],
  };
}

/** A script of a page as templates compare them (static/templateKey.ts scriptIdentity); null if it is no URL. */
export function normalizedScript(url: string, pageUrl: string): string | null {
  try {
    return scriptIdentity(url, pageUrl);
  } catch {
    return null;
  }
}

/**
 * What a page of the template will fetch and link beyond its document: the fixed URLs, then the rules filled in from
 * its URL (each once). A rule naming a part the page's URL lacks (no such segment, no such query parameter, or an
 * empty one) makes the page underivable, with a reason naming the rule.
 */
export function deriveFor(learned: LearnedTemplate, pageUrl: string): { fetches: string[]; links: string[] } | { underivable: string } {
  const page = new URL(pageUrl);
  const derive = (fixed: string[], rules: string[]): string[] | { underivable: string } => {
    const urls = new Set(fixed);
    for (const rule of rules) {
      const filled = fillRule(rule, page);
      if ("underivable" in filled) return filled;
      urls.add(filled.url);
    }
    return [...urls];
  };
  const fetches = derive(learned.fixedFetches, learned.fetchRules);
  if (!Array.isArray(fetches)) return fetches;
  const links = derive(learned.fixedLinks, learned.linkRules);
  if (!Array.isArray(links)) return links;
  return { fetches, links };
}

/** Whether a URL is one of the template's volatile fetches (same path, a query of its own each time): not compared on verify pages. */
export function isVolatile(learned: LearnedTemplate, url: string): boolean {
  try {
    const parsed = new URL(url);
    return learned.volatilePaths.includes(parsed.origin + parsed.pathname);
  } catch {
    return false;
  }
}
