/** One WACZ of a replay set: found, its bytes on this machine, its hash and size checked. */
export interface SetMember {
  /** The name the set knows it by: relation.requires' filename, or the source's own file name. */
  name: string;
  /** sha256:<hex> of its bytes, as read. */
  hash: string;
  size: number;
  crawlId?: string;
  /** A local file holding its bytes: the file itself, or its download. */
  path: string;
  /** Where it was found, as shown to the user: a path, an http(s) URL or s3://bucket/key. */
  where: string;
  /** Names of the set's WACZ files whose relation.requires names this one (empty for a source). */
  requiredBy: string[];
  /** Given as the source (its pages are the set's own), not pulled in as a dependency. */
  isSource: boolean;
}

/** A WACZ some member requires that was found nowhere with the right bytes. */
export interface MissingWacz {
  name: string;
  hash?: string;
  size?: number;
  requiredBy: string[];
  /** Each place looked, with what was (not) there: "/crawls/collections/a: no such file". */
  looked: string[];
}

/** A revisit whose WARC-Refers-To names a record the set does not hold as a response. */
export interface UnresolvedRevisit {
  /** The WACZ holding the revisit. */
  wacz: string;
  url: string;
  date: string;
  refersToUrl: string;
  refersToDate: string;
}

/** A source resolved: every WACZ it needs, dependencies before what depends on them. */
export interface WaczSet {
  members: SetMember[];
  missing: MissingWacz[];
  /** Delete what was downloaded to build the set. */
  dispose(): Promise<void>;
}

/** "x.wacz (sha256:ab12…, 1234 bytes)" */
export function describeWacz(wacz: { name: string; hash?: string; size?: number }): string {
  const facts = [wacz.hash, wacz.size !== undefined ? `${wacz.size} bytes` : undefined].filter(Boolean);
  return facts.length ? `${wacz.name} (${facts.join(", ")})` : wacz.name;
}

/** One line naming a missing WACZ, who requires it and every place looked. */
export function missingLine(missing: MissingWacz): string {
  return `${describeWacz(missing)}, required by ${missing.requiredBy.join(", ")}, was not found: looked in ${missing.looked.join("; ") || "no place"}`;
}

/** One line naming a revisit that resolves to no response of the set. */
export function unresolvedLine(revisit: UnresolvedRevisit): string {
  const target = revisit.refersToUrl ? `${revisit.refersToUrl} at ${revisit.refersToDate}` : "nothing (no WARC-Refers-To-Target-URI)";
  return `the revisit of ${revisit.url} at ${revisit.date} in ${revisit.wacz} names ${target}, which no WACZ of the set holds as a response`;
}
