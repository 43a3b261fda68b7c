import type { CDPSession } from "puppeteer-core";
import { errorMessage, logger } from "../log/logger.js";
import { withoutHash } from "../scope/urls.js";
import { withTimeout } from "../util/deadline.js";

const DETECT_DEADLINE_MS = 5000;

/** Read in the page: its URL (to tell the document is still the one asked about), type and encoding. */
const DETECT_EXPRESSION = "JSON.stringify([location.href, document.contentType, document.characterSet])";

/**
 * The type and charset the browser took the tab's document for, as browsertrix-crawler writes them into
 * WARC-Identified-Payload-Type: `text/html; charset="windows-1252"`. A server may send no charset, or a
 * wrong one, and leave the browser to sniff it; replay then needs the browser's answer. Read once the
 * document has arrived whole (the parser has settled its encoding by then). Null when the tab shows another
 * document by now (it navigated on), or did not answer.
 */
export async function detectedContentType(cdp: CDPSession, url: string): Promise<string | null> {
  try {
    const { result } = await withTimeout(cdp.send("Runtime.evaluate", { expression: DETECT_EXPRESSION, returnByValue: true }), DETECT_DEADLINE_MS, `no answer within ${DETECT_DEADLINE_MS / 1000}s`);
    if (typeof result.value !== "string") return null;
    const [shown, type, charset] = JSON.parse(result.value) as unknown[];
    if (typeof shown !== "string" || typeof type !== "string" || typeof charset !== "string" || !type) return null;
    if (withoutHash(shown) !== withoutHash(url)) return null;
    return charset ? `${type}; charset="${charset}"` : type;
  } catch (err) {
    logger.debug("capture", "cannot read the document's detected type", { url, error: errorMessage(err) });
    return null;
  }
}
