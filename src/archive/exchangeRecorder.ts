import { rm } from "node:fs/promises";
import type { Exchange } from "./exchange.js";
import { bodySize } from "./exchange.js";
import { payloadDigest } from "./digest.js";
import { newRecordId, requestRecord, responseRecord } from "./records.js";
import type { WarcWriter, WrittenRecord } from "./warcWriter.js";

/** Answers "was this exchange stored already in this crawl?" (shared across processes via Redis). */
export interface ExchangeClaims {
  claimExchange(status: number, method: string, url: string): Promise<boolean>;
  unclaimExchange(status: number, method: string, url: string): Promise<void>;
}

export type RecordOutcome =
  | { kind: "written"; response: WrittenRecord; request: WrittenRecord }
  | { kind: "skipped"; reason: "already-stored" | "partial-content" };

/**
 * Turns captured exchanges into WARC records: the step between "page" and "WARC" in the pipeline.
 * Within one crawl, a URL with the same status and method is stored once.
 */
export class ExchangeRecorder {
  constructor(
    private readonly writer: WarcWriter,
    private readonly claims: ExchangeClaims,
  ) {}

  async record(exchange: Exchange): Promise<RecordOutcome> {
    try {
      // A 206 body is a fragment: storing it as the resource would be wrong. Callers may fetch the full body.
      if (exchange.status === 206) return { kind: "skipped", reason: "partial-content" };
      if (!(await this.claims.claimExchange(exchange.status, exchange.method, exchange.url))) {
        return { kind: "skipped", reason: "already-stored" };
      }
      try {
        const digest = await payloadDigest(exchange.body);
        const responseId = newRecordId();
        const [response, request] = await this.writer.writeRecords([
          responseRecord(exchange, responseId, digest),
          requestRecord(exchange, responseId),
        ]);
        return { kind: "written", response, request };
      } catch (err) {
        await this.claims.unclaimExchange(exchange.status, exchange.method, exchange.url).catch(() => undefined);
        throw err;
      }
    } finally {
      if (exchange.body.kind === "file") await rm(exchange.body.path, { force: true });
    }
  }
}

export function describeExchange(exchange: Exchange): Record<string, unknown> {
  return { url: exchange.url, status: exchange.status, size: bodySize(exchange.body), type: exchange.resourceType };
}
