import { open } from "node:fs/promises";
import { HeadersMultiMap, WARCParser } from "warcio";

/** Where one record is: its WARC file's path and its bytes there (a gzip member, or a record of a plain file). */
export interface RecordPlacement {
  path: string;
  offset: number;
  length: number;
}

/** A response record read back: its URL and date, the HTTP status line and headers as stored, and its payload decoded. */
export interface StoredResponse {
  url: string;
  date: string;
  status: number;
  statusText: string;
  /** Every header as stored, in order, repeated names (Set-Cookie) one entry each. */
  headers: [string, string][];
  /** The payload with any content- or transfer-encoding the stored headers still name undone: as a browser renders it. */
  payload: Uint8Array;
}

/**
 * The response record at `placement`, read with warcio; null when the record there is no response (a revisit holds
 * no payload, a request or metadata record none of the response). Throws when the file or the record cannot be read
 * (moved, cut, not a WARC record).
 */
export async function readStoredResponse(placement: RecordPlacement): Promise<StoredResponse | null> {
  const bytes = await readBytes(placement);
  const record = await new WARCParser([bytes], { keepHeadersCase: true }).parse();
  if (!record) throw new Error(`no WARC record at offset ${placement.offset} of ${placement.path}`);
  if (record.warcType !== "response" || !record.httpHeaders) return null;
  const status = Number(record.httpHeaders.statusCode);
  if (!Number.isInteger(status)) throw new Error(`the response record at offset ${placement.offset} of ${placement.path} has no status`);
  // keepHeadersCase parses into a HeadersMultiMap: names as stored, repeated names kept apart.
  const stored = record.httpHeaders.headers;
  const headers: [string, string][] = stored instanceof HeadersMultiMap ? [...stored] : [];
  const encoding = headerOf(headers, "content-encoding")?.trim().toLowerCase() ?? "";
  // warcio undoes gzip and deflate; a body stored still in another encoding (br, zstd) cannot be handed on decoded.
  if (!DECODABLE.has(encoding)) throw new Error(`the response record at offset ${placement.offset} of ${placement.path} is stored ${encoding}-encoded`);
  const payload = await record.readFully(true);
  return {
    url: record.warcTargetURI ?? "",
    date: record.warcDate ?? "",
    status,
    statusText: String(record.httpHeaders.statusText ?? ""),
    headers,
    payload,
  };
}

/** Content encodings warcio's content reader undoes ("": none). */
const DECODABLE = new Set(["", "identity", "gzip", "x-gzip", "deflate"]);

function headerOf(headers: readonly [string, string][], name: string): string | undefined {
  for (const [key, value] of headers) if (key.toLowerCase() === name) return value;
  return undefined;
}

async function readBytes({ path, offset, length }: RecordPlacement): Promise<Buffer> {
  const file = await open(path, "r");
  try {
    const bytes = Buffer.alloc(length);
    const { bytesRead } = await file.read(bytes, 0, length, offset);
    if (bytesRead !== length) throw new Error(`${path} ends before byte ${offset + length}`);
    return bytes;
  } finally {
    await file.close();
  }
}
