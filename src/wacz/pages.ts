// pages.jsonl handling for packaging: the WACZ must contain pages/pages.jsonl with a
// json-pages-1.0 header line; the first page supplies the default mainPageUrl/Date.
import { createReadStream } from "node:fs";
import { open, writeFile } from "node:fs/promises";
import { createInterface } from "node:readline";

export const PAGES_HEADER_LINE =
  '{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}';
export const EXTRA_PAGES_HEADER_LINE =
  '{"format": "json-pages-1.0", "id": "extra-pages", "title": "Extra Pages"}';

export interface FirstPage {
  url: string;
  ts?: string;
}

export interface PagesFileInfo {
  /** first non-blank line is a json-pages header */
  hasHeader: boolean;
  /** first page line with a string url, if any */
  firstPage?: FirstPage;
  /** at least one non-blank line besides the header */
  hasPages: boolean;
}

function parseObject(line: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(line);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function isHeader(obj: Record<string, unknown> | null): boolean {
  return obj !== null && typeof obj["format"] === "string" && !("url" in obj);
}

/** Stream the file only as far as needed to find the header and the first page. */
export async function inspectPagesFile(path: string): Promise<PagesFileInfo> {
  const stream = createReadStream(path, { encoding: "utf8" });
  const rl = createInterface({ input: stream, crlfDelay: Infinity });
  const info: PagesFileInfo = { hasHeader: false, hasPages: false };
  let first = true;
  try {
    for await (const raw of rl) {
      const line = raw.trim();
      if (!line) continue;
      const obj = parseObject(line);
      if (first) {
        first = false;
        if (isHeader(obj)) {
          info.hasHeader = true;
          continue;
        }
      }
      info.hasPages = true;
      if (obj && typeof obj["url"] === "string") {
        info.firstPage = { url: obj["url"] };
        if (typeof obj["ts"] === "string") info.firstPage.ts = obj["ts"];
        break;
      }
    }
  } finally {
    rl.close();
    stream.destroy();
  }
  return info;
}

export async function writeHeaderOnlyPages(path: string, headerLine = PAGES_HEADER_LINE): Promise<void> {
  await writeFile(path, headerLine + "\n", "utf8");
}

/** Copy `src` to `dest` with `headerLine` prepended (for a pages file missing its header). */
export async function copyWithHeader(src: string, dest: string, headerLine: string): Promise<void> {
  const fh = await open(dest, "w");
  try {
    await fh.write(headerLine + "\n", null, "utf8");
    for await (const chunk of createReadStream(src)) {
      await fh.write(chunk as Buffer);
    }
  } finally {
    await fh.close();
  }
}
