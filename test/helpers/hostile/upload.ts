import { createHash } from "node:crypto";
import type { HostileRoutes } from "./route.js";

/**
 * Hostile routes: a heavy page, for uploads (STORE_ENDPOINT_URL). Its picture is 6 MiB of bytes that do
 * not compress, so the WACZ of a crawl of that one page is over 6 MiB: above the 5 MiB part size the
 * upload tests set, it takes the multipart path.
 */
const P = "/hostile/upload";
export const HEAVY_PAGE = `${P}/heavy.html`;
export const HEAVY_BODY_SIZE = 6 * 1024 * 1024;

let heavyBody: Buffer | null = null;

/** The picture's bytes: a sha256 chain, the same on every run (made once, on first request). */
function heavy(): Buffer {
  if (heavyBody) return heavyBody;
  const blocks: Buffer[] = [];
  let block = createHash("sha256").update("upload").digest();
  for (let size = 0; size < HEAVY_BODY_SIZE; size += block.length) {
    blocks.push(block);
    block = createHash("sha256").update(block).digest();
  }
  heavyBody = Buffer.concat(blocks).subarray(0, HEAVY_BODY_SIZE);
  return heavyBody;
}

export const uploadRoutes: HostileRoutes = {
  [HEAVY_PAGE]: (_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" })
      .end(`<!doctype html><html><head><title>heavy</title></head><body><h1>heavy</h1><img src="${P}/heavy.png" width="1" height="1"></body></html>`);
  },
  [`${P}/heavy.png`]: (_req, res) => {
    res.writeHead(200, { "content-type": "image/png", "content-length": String(HEAVY_BODY_SIZE) }).end(heavy());
  },
};
