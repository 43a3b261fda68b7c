import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";

/** A WARC record parsed without warcio, so tests check our output independently of the library that wrote it. */
export interface RawRecord {
  headers: Map<string, string>;
  block: Buffer;
  /** HTTP headers as text (for request/response/revisit), and the payload after them. */
  httpHead: string | null;
  payload: Buffer;
  /** Offset and length of the record's gzip member in the file. */
  offset: number;
  length: number;
}

export function sha256(bytes: Uint8Array): string {
  return "sha256:" + createHash("sha256").update(bytes).digest("hex");
}

/** Split a .warc.gz into its gzip members (one per record), as a CDX offset/length addresses them. */
export function gzipMembers(file: Buffer): { offset: number; length: number; data: Buffer }[] {
  const members: { offset: number; length: number; data: Buffer }[] = [];
  let offset = 0;
  while (offset < file.length) {
    // Find the next member start after this one by trying increasing candidate ends: members begin 1f 8b 08.
    let end = offset + 18;
    for (;;) {
      end = file.indexOf(Buffer.from([0x1f, 0x8b, 0x08]), end);
      if (end < 0) end = file.length;
      try {
        const data = gunzipSync(file.subarray(offset, end));
        members.push({ offset, length: end - offset, data });
        break;
      } catch {
        if (end >= file.length) throw new Error(`corrupt gzip member at ${offset}`);
        end += 1;
      }
    }
    offset = end;
  }
  return members;
}

export function parseRecord(data: Buffer, offset = 0, length = data.length): RawRecord {
  const headEnd = data.indexOf("\r\n\r\n");
  const lines = data.subarray(0, headEnd).toString("utf8").split("\r\n");
  if (!/^WARC\/1\.1$/.test(lines[0])) throw new Error(`not a WARC/1.1 record: ${lines[0]}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const i = line.indexOf(":");
    headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim());
  }
  const contentLength = Number(headers.get("content-length"));
  const block = data.subarray(headEnd + 4, headEnd + 4 + contentLength);
  if (block.length !== contentLength) throw new Error("block shorter than Content-Length");
  if (!data.subarray(headEnd + 4 + contentLength).equals(Buffer.from("\r\n\r\n"))) throw new Error("record not closed by CRLFCRLF");
  let httpHead: string | null = null;
  let payload = block;
  if (/^application\/http/.test(headers.get("content-type") ?? "")) {
    const httpEnd = block.indexOf("\r\n\r\n");
    httpHead = block.subarray(0, httpEnd).toString("latin1");
    payload = block.subarray(httpEnd + 4);
  }
  return { headers, block, httpHead, payload, offset, length };
}

export function readWarcRecords(path: string): RawRecord[] {
  return gzipMembers(readFileSync(path)).map((m) => parseRecord(m.data, m.offset, m.length));
}

export function httpHeader(record: RawRecord, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const line of (record.httpHead ?? "").split("\r\n").slice(1)) {
    const i = line.indexOf(":");
    if (line.slice(0, i).trim().toLowerCase() === lower) return line.slice(i + 1).trim();
  }
  return undefined;
}

export function httpStatus(record: RawRecord): number {
  return Number((record.httpHead ?? "").split(" ")[1]);
}
