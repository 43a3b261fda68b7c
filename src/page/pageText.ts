import type { CDPSession, Protocol } from "puppeteer-core";

/**
 * Elements whose own text is not page text (browsertrix-crawler's default extraction leaves out the
 * same ones): code, styles, page chrome repeated on every page, and the title (pages.jsonl has it).
 */
const SKIPPED_PARENTS = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TITLE", "HEADER", "FOOTER", "BANNER-DIV"]);

const TEXT_NODE = 3;
const ELEMENT_NODE = 1;

/**
 * The page's text as browsertrix-crawler extracts it by default: every text node of the rendered DOM
 * (the page and its same-process frames, from a DOM snapshot), trimmed, empty ones left out, one per
 * line, unless its parent element is one of SKIPPED_PARENTS.
 */
export async function extractPageText(cdp: CDPSession): Promise<string> {
  const snapshot = await cdp.send("DOMSnapshot.captureSnapshot", { computedStyles: [] });
  return textOfSnapshot(snapshot);
}

export function textOfSnapshot(snapshot: Protocol.DOMSnapshot.CaptureSnapshotResponse): string {
  const { strings, documents } = snapshot;
  const lines: string[] = [];
  for (const doc of documents) {
    const { nodeType = [], nodeName = [], nodeValue = [], parentIndex = [] } = doc.nodes;
    for (let i = 0; i < nodeType.length; i++) {
      if (nodeType[i] !== TEXT_NODE) continue;
      const valueIndex = nodeValue[i] ?? -1;
      const parent = parentIndex[i] ?? -1;
      if (valueIndex < 0 || parent < 0 || nodeType[parent] !== ELEMENT_NODE) continue;
      if (SKIPPED_PARENTS.has(strings[nodeName[parent] ?? -1] ?? "")) continue;
      const value = (strings[valueIndex] ?? "").trim();
      if (value) lines.push(value);
    }
  }
  return lines.join("\n");
}
