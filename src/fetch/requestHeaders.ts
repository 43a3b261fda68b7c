/**
 * Request headers the operator adds (--header, `headers:` in --config): some sites let a crawler in only with
 * a `From:`, a cookie or a token (Browsertrix #2108). A rule applies to every host, or to one host and its
 * subdomains. They go on every request the browser sends (its request stage, capture/pageCapture.ts) and on
 * every fetch of the crawler's own (directFetch, plainFetch), redirect hops included, each by its own host.
 */
export interface HeaderRule {
  /** Lower-case host name the header is for (its subdomains too); null: every host. */
  host: string | null;
  name: string;
  value: string;
}

/** A header name is an HTTP token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the crawler or Chromium own: set here they would break the request or lie about it. */
const NOT_SETTABLE = new Set(["host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer", "keep-alive"]);
/** A header whose name says it carries a credential: its value is kept out of logs (see headerSecrets). */
const CREDENTIAL_NAME = /auth|cookie|token|key|secret|session|signature|password/i;

export class HeaderRuleError extends Error {}

/**
 * `Name: value` (every host) or `host Name: value` (that host and its subdomains), as --header takes it;
 * `host` may also come separately (a `headers:` map in --config). Throws HeaderRuleError with one line.
 */
export function parseHeaderRule(text: string, host: string | null = null): HeaderRule {
  const colon = text.indexOf(":");
  const head = colon < 0 ? [] : text.slice(0, colon).trim().split(/\s+/);
  if (colon < 0 || head.length === 0 || head.length > (host === null ? 2 : 1) || head[0] === "") {
    throw new HeaderRuleError(`--header takes "Name: value" or "host Name: value", got ${JSON.stringify(text)}`);
  }
  const name = head[head.length - 1];
  const ruleHost = head.length === 2 ? head[0] : host;
  const value = text.slice(colon + 1).trim();
  if (!HEADER_NAME.test(name)) throw new HeaderRuleError(`--header ${JSON.stringify(text)}: ${JSON.stringify(name)} is not a header name`);
  if (NOT_SETTABLE.has(name.toLowerCase())) throw new HeaderRuleError(`--header ${JSON.stringify(text)}: ${name} cannot be set (the connection's own)`);
  if (/[\r\n\0]/.test(value)) throw new HeaderRuleError(`--header ${name}: the value must be on one line`);
  return { host: ruleHost === null || ruleHost === "*" ? null : normalHost(ruleHost, text), name, value };
}

function normalHost(host: string, text: string): string {
  const bare = host.replace(/^\*\./, "").replace(/\.$/, "").toLowerCase();
  let parsed: URL;
  try {
    parsed = new URL(`http://${bare}/`);
  } catch {
    throw new HeaderRuleError(`--header ${JSON.stringify(text)}: ${JSON.stringify(host)} is not a host name`);
  }
  if (parsed.hostname !== bare || bare === "") throw new HeaderRuleError(`--header ${JSON.stringify(text)}: ${JSON.stringify(host)} is not a host name`);
  return bare;
}

/** Values of the rules that may hold credentials (named like one, or long enough to be a token): never logged. */
export function headerSecrets(rules: readonly HeaderRule[]): string[] {
  return rules.filter((rule) => CREDENTIAL_NAME.test(rule.name) || rule.value.length >= 16).map((rule) => rule.value);
}

/** The crawl's header rules (--header), for every request it makes: the browser's and its own. */
export class RequestHeaders {
  /** No rules: nothing is added (outside a crawl, and most crawls). */
  static readonly none = new RequestHeaders([]);

  constructor(private readonly rules: readonly HeaderRule[]) {}

  /** The headers to add to a request for `url`, later rules winning for the same name; [] for most crawls. */
  for(url: string): [string, string][] {
    if (this.rules.length === 0) return [];
    let host: string;
    try {
      host = new URL(url).hostname.toLowerCase();
    } catch {
      return [];
    }
    const byName = new Map<string, [string, string]>();
    for (const rule of this.rules) {
      if (rule.host !== null && host !== rule.host && !host.endsWith(`.${rule.host}`)) continue;
      byName.set(rule.name.toLowerCase(), [rule.name, rule.value]);
    }
    return [...byName.values()];
  }

  /** `headers` with the rules' headers for `url` put in (replacing the same names). */
  with(url: string, headers: readonly [string, string][]): [string, string][] {
    const extra = this.for(url);
    if (extra.length === 0) return [...headers];
    const names = new Set(extra.map(([name]) => name.toLowerCase()));
    return [...headers.filter(([name]) => !names.has(name.toLowerCase())), ...extra];
  }
}
