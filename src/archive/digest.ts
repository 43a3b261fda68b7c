import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import type { ExchangeBody } from "./exchange.js";

/** sha256 digest written exactly as in WARC-Payload-Digest: "sha256:<hex>". */
export async function payloadDigest(body: ExchangeBody): Promise<string> {
  const hash = createHash("sha256");
  if (body.kind === "file" && body.digest) return body.digest;
  if (body.kind === "bytes") {
    hash.update(body.bytes);
  } else {
    for await (const chunk of createReadStream(body.path)) hash.update(chunk as Buffer);
  }
  return "sha256:" + hash.digest("hex");
}
