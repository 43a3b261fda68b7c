// The capture's rules given on the command line, as data: the options (config/) name these without
// importing the code that applies them (captureExtras.ts).

/** One --originOverride: requests to `from` (an origin) go to `to` (an origin); the archive keeps `from`. */
export interface OriginOverrideRule {
  from: string;
  to: string;
}

/** One --rateLimitOnMatch rule: a text response matching `regex` (and, if not 0, answered `status`) is a rate-limit answer. */
export interface RateLimitMatchRule {
  regex: RegExp;
  /** 0: any status. */
  status: number;
}
