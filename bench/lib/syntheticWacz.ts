import { createHash, randomBytes } from "node:crypto";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { WARCRecord, WARCSerializer } from "warcio";
import { writeWacz, type WaczResult } from "../../src/wacz/index.js";

export interface SyntheticWaczOptions {
  dir: string;
  /** WACZ file name, e.g. "crawl-a.wacz". */
  name: string;
  /** Number of response records (each with its request record). */
  records: number;
  /** Distinguishes payloads of different WACZ files (same seed = same payloads = duplicates). */
  seed: string;
  /** Records whose body is this many random bytes (makes the archive large, its index small). */
  bigBodies?: { count: number; size: number };
  /** Store a plain indexes/index.cdxj whatever its size (default: ZipNum above the usual threshold). */
  plainIndex?: boolean;
}

export interface SyntheticWacz extends WaczResult {
  digests: string[];
}

/** A real WACZ (warcio records, our WACZ writer) with `records` distinct small text payloads. */
export async function writeSyntheticWacz(options: SyntheticWaczOptions): Promise<SyntheticWacz> {
  const warcPath = join(options.dir, options.name.replace(/\.wacz$/, "") + ".warc.gz");
  const file = await open(warcPath, "wx");
  const digests: string[] = [];
  const date = new Date("2026-01-01T00:00:00.000Z").getTime();
  try {
    let pending: Uint8Array[] = [];
    for (let i = 0; i < options.records + (options.bigBodies?.count ?? 0); i++) {
      const big = i >= options.records;
      const body = big ? randomBytes(options.bigBodies!.size) : Buffer.from(`<html><body>${options.seed} record ${i} ${"x".repeat(i % 200)}</body></html>`);
      digests.push("sha256:" + createHash("sha256").update(body).digest("hex"));
      const url = `https://synthetic.example/${options.seed}/${big ? "big" : "page"}/${i}.html`;
      const when = new Date(date + i * 1000).toISOString();
      const response = WARCRecord.create(
        { url, date: when, type: "response", warcVersion: "WARC/1.1", statusline: "HTTP/1.1 200 OK", httpHeaders: { "Content-Type": big ? "application/octet-stream" : "text/html", "Content-Length": String(body.length) } },
        [body],
      );
      const request = WARCRecord.create(
        { url, date: when, type: "request", warcVersion: "WARC/1.1", statusline: `GET /${options.seed}/${i}.html HTTP/1.1`, httpHeaders: { Host: "synthetic.example" } },
        [],
      );
      pending.push(await serializeFast(response, body), await serializeFast(request, Buffer.alloc(0)));
      if (pending.length >= 2000) {
        await file.writev(pending);
        pending = [];
      }
    }
    if (pending.length) await file.writev(pending);
  } finally {
    await file.close();
  }
  const result = await writeWacz({
    outputPath: join(options.dir, options.name), warcFiles: [warcPath], software: "synthetic",
    ...(options.plainIndex ? { zipNumThresholdBytes: Number.MAX_SAFE_INTEGER } : {}),
  });
  return { ...result, digests };
}

/**
 * warcio computes digests with a WebAssembly hasher created per record, which makes a million records
 * take many minutes; digest here with node:crypto (the block digest over the same HTTP header bytes
 * warcio writes) and let warcio serialize the rest.
 */
async function serializeFast(record: WARCRecord, payload: Buffer): Promise<Uint8Array> {
  const head = Buffer.from(record.httpHeaders!.toString() + "\r\n");
  const digest = (...parts: Buffer[]) => "sha256:" + parts.reduce((h, p) => h.update(p), createHash("sha256")).digest("hex");
  record.warcHeaders.headers.set("WARC-Payload-Digest", digest(payload));
  record.warcHeaders.headers.set("WARC-Block-Digest", digest(head, payload));
  return gzipSync(await WARCSerializer.serialize(record, { gzip: false }));
}
