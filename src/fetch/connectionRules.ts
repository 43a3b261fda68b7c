import type { Blocking } from "../block/blocking.js";
import { AddressPolicy } from "./addressPolicy.js";
import { RequestHeaders } from "./requestHeaders.js";
import type { SocketGate } from "./socketGate.js";

/**
 * What every connection of a run obeys, handed to whoever connects (the fetchers, the capture, the page
 * worker, the browser) rather than read from anywhere: which addresses may be reached, the headers added
 * (--header), what is blocked (--blockRules, --blockAds).
 */
export interface ConnectionRules {
  readonly addresses: AddressPolicy;
  readonly headers: RequestHeaders;
  /** null when nothing is blocked. */
  readonly blocking: Blocking | null;
}

/** A crawl's rules and the gate its browser connects through; built once by the crawl (crawl/runContext.ts). */
export interface RunContext extends ConnectionRules {
  readonly socketGate: SocketGate;
}

/**
 * The rules outside a crawl (the tools, and what the options point at before the seeds are known):
 * loopback and private addresses allowed, no headers added, nothing blocked.
 */
export function rulesOutsideACrawl(): ConnectionRules {
  return { addresses: AddressPolicy.outsideACrawl(), headers: RequestHeaders.none, blocking: null };
}
