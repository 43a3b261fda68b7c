import type { Blocking } from "../block/blocking.js";
import type { CrawlOptions } from "../config/crawlOptions.js";
import { AddressPolicy } from "../fetch/addressPolicy.js";
import { RequestHeaders } from "../fetch/requestHeaders.js";
import type { RunContext } from "../fetch/connectionRules.js";
import { SocketGate } from "../fetch/socketGate.js";

export type { RunContext } from "../fetch/connectionRules.js";

/**
 * The run's context, built once: the address policy (what the seeds are on, and --allowAddresses; a seed
 * on a refused address throws AddressRefusedError), the --header rules, the blocking (--blockRules,
 * --blockAds: reports/blockedReport.ts) and the socket gate the browser connects through. Close the gate
 * with closeRunContext when the run ends.
 */
export async function openRunContext(options: CrawlOptions, blocking: Blocking | null): Promise<RunContext> {
  const addresses = await AddressPolicy.forSeeds(options.seeds, options.allowAddresses);
  return { addresses, headers: new RequestHeaders(options.pageLoad.requestHeaders), blocking, socketGate: await SocketGate.start(addresses) };
}

export async function closeRunContext(context: RunContext | null): Promise<void> {
  await context?.socketGate.close();
}
