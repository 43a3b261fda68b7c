/**
 * browsertrix-crawler's --blockRules, with its semantics (src/util/blockrules.ts there): each rule has a
 * `url` regex, optionally `inFrameUrl` (the rule applies only to requests made in a frame whose URL
 * matches; for a frame's own navigation, the frame that holds it) and `frameTextMatch` (the rule applies
 * only to frame navigations, and only when the frame's text matches), and a `type`: `block` blocks what
 * matches, `allowOnly` blocks what does not. Rules are tried in order; the first that blocks decides,
 * and a text rule whose URL matched decides either way.
 */
export type BlockRuleType = "block" | "allowOnly";

export interface BlockRule {
  url: RegExp | null;
  inFrameUrl: RegExp | null;
  frameTextMatch: RegExp | null;
  type: BlockRuleType;
  /** The rule as given, for the log and the report. */
  text: string;
}

const RULE_KEYS = new Set(["url", "inFrameUrl", "frameTextMatch", "type"]);

export class BlockRuleError extends Error {}

function regex(value: unknown, field: string, where: string): RegExp | null {
  if (value === undefined || value === null || value === "") return null;
  if (typeof value !== "string") throw new BlockRuleError(`${where}: ${field} must be a regular expression (a string), got ${JSON.stringify(value)}`);
  try {
    return new RegExp(value);
  } catch (err) {
    throw new BlockRuleError(`${where}: ${field} is not a regular expression: ${JSON.stringify(value)} (${err instanceof Error ? err.message : String(err)})`);
  }
}

/**
 * One rule: an object {url, inFrameUrl, frameTextMatch, type} (a YAML mapping in --config; on the command
 * line, its JSON), or a string, which is a URL regex to block (as browsertrix-crawler takes a string).
 */
export function parseBlockRule(value: unknown, where = "--blockRules"): BlockRule {
  let spec = value;
  if (typeof value === "string" && value.trimStart().startsWith("{")) {
    try {
      spec = JSON.parse(value) as unknown;
    } catch {
      spec = value; // a regex that happens to start with "{"
    }
  }
  if (typeof spec === "string") return { url: regex(spec, "url", where), inFrameUrl: null, frameTextMatch: null, type: "block", text: spec };
  if (spec === null || typeof spec !== "object" || Array.isArray(spec)) throw new BlockRuleError(`${where}: a rule is a URL regex or a mapping with url, inFrameUrl, frameTextMatch, type; got ${JSON.stringify(spec)}`);
  const fields = spec as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (!RULE_KEYS.has(key)) throw new BlockRuleError(`${where}: unknown key "${key}" in a rule (a rule may have ${[...RULE_KEYS].join(", ")})`);
  }
  const type = fields.type ?? "block";
  if (type !== "block" && type !== "allowOnly") throw new BlockRuleError(`${where}: a rule's type must be block or allowOnly, got ${JSON.stringify(type)}`);
  return {
    url: regex(fields.url, "url", where),
    inFrameUrl: regex(fields.inFrameUrl, "inFrameUrl", where),
    frameTextMatch: regex(fields.frameTextMatch, "frameTextMatch", where),
    type,
    text: JSON.stringify(Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== null))),
  };
}

/** A request as the rules see it. */
export interface RuleRequest {
  url: string;
  /** The URL of the frame the request is made in; for a frame's navigation, of the frame holding it. */
  frameUrl: string;
  /** A frame's navigation (its document), not a resource. */
  navigation: boolean;
}

export type RuleVerdict =
  | { action: "allow" }
  | { action: "block"; rule: BlockRule }
  /** A text rule matched the URL of a frame navigation: its text decides (textVerdict). */
  | { action: "checkText"; rule: BlockRule };

const ALLOW: RuleVerdict = { action: "allow" };

/** What the rules say of a request (not of a page's own document: rules never block pages). */
export function judgeByRules(rules: readonly BlockRule[], request: RuleRequest): RuleVerdict {
  // As browsertrix-crawler: nothing is blocked in a frame that has no document yet.
  if (!rules.length || request.frameUrl === "about:blank") return ALLOW;
  for (const rule of rules) {
    if (rule.inFrameUrl && !rule.inFrameUrl.test(request.frameUrl)) continue;
    const urlMatched = rule.url !== null && rule.url.test(request.url);
    if (rule.frameTextMatch) {
      if (!urlMatched || !request.navigation) continue;
      return { action: "checkText", rule };
    }
    if (urlMatched !== (rule.type === "allowOnly")) return { action: "block", rule };
  }
  return ALLOW;
}

/** A text rule's verdict on the frame's text (null: it could not be read): block when it matches, or for allowOnly when it does not. */
export function textVerdict(rule: BlockRule, text: string | null): boolean {
  const matched = text !== null && rule.frameTextMatch !== null && rule.frameTextMatch.test(text);
  return matched !== (rule.type === "allowOnly");
}
