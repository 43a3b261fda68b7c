import { BlockRuleError, parseBlockRule, type BlockRule } from "../../block/rules.js";
import { OptionsError } from "../optionsError.js";

/** browsertrix-crawler's blocking flags (src/block/: what they block, how). */
export interface BlockOptions {
  /** --blockRules, in the order given. */
  rules: BlockRule[];
  /** --blockMessage: HTML shown in a frame whose document a rule blocked; "" = none. */
  blockMessage: string;
  /** --blockAds (--blockads): block requests to the hosts of the ad and tracker list (src/block/adHosts.ts). */
  blockAds: boolean;
  /** --adBlockMessage: HTML shown in a frame whose document is on an ad host; "" = none. */
  adBlockMessage: string;
}

export interface RawBlockFlags {
  /** Each a URL regex or a rule's JSON (a --config mapping arrives as its JSON). */
  blockRules?: string[];
  blockMessage?: string;
  blockAds?: boolean;
  adBlockMessage?: string;
}

export function blockOptions(flags: RawBlockFlags): BlockOptions {
  let rules: BlockRule[];
  try {
    rules = (flags.blockRules ?? []).filter((r) => r.trim() !== "").map((r, i) => parseBlockRule(r, `--blockRules[${i}]`));
  } catch (err) {
    if (err instanceof BlockRuleError) throw new OptionsError(err.message);
    throw err;
  }
  return { rules, blockMessage: flags.blockMessage ?? "", blockAds: flags.blockAds ?? false, adBlockMessage: flags.adBlockMessage ?? "" };
}
