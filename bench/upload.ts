/**
 * Upload benchmark: puts a generated WACZ-sized file of N MiB into an S3-compatible server on loopback
 * (s3rver, in its own process so that its memory is not counted) the way the crawler does, through
 * src/upload/ (multipart above the part size). Prints JSON: seconds, MiB/s, parts, the uploader's peak
 * RSS and its growth over the run (bounded by the parts in flight, not by the file's size).
 *   node dist/bench/upload.js [--mib 256]
 */
import { spawn } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { once } from "node:events";
import { parseArgs } from "node:util";
import { openS3Client } from "../src/upload/s3Client.js";
import { readStoreSettings } from "../src/upload/storeSettings.js";
import { partSizeFor, uploadFile } from "../src/upload/uploadFile.js";

const { values } = parseArgs({ options: { mib: { type: "string", default: "256" } } });
const size = Number(values.mib) * 1024 * 1024;
const dir = mkdtempSync(join(tmpdir(), "bench-upload-"));

const server = spawn(process.execPath, ["--input-type=module", "-e", `
  import S3rver from "s3rver";
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: ${JSON.stringify(join(dir, "s3"))}, configureBuckets: [{ name: "bench" }] });
  const { port } = await server.run();
  console.log(port);
`], { stdio: ["ignore", "pipe", "inherit"] });

try {
  const [portLine] = (await once(server.stdout!, "data")) as [Buffer];
  const file = join(dir, "bench.wacz");
  const out = createWriteStream(file);
  // Bytes that do not compress, as a WACZ's stored WARC members are (deterministic, cheap to make).
  const block = Buffer.alloc(1024 * 1024);
  for (let written = 0, seed = 1; written < size; written += block.length) {
    for (let i = 0; i < block.length; i += 4) block.writeUInt32LE((seed = (seed * 1664525 + 1013904223) >>> 0), i);
    if (!out.write(block)) await once(out, "drain");
  }
  out.end();
  await once(out, "finish");

  const settings = readStoreSettings({ STORE_ENDPOINT_URL: `http://127.0.0.1:${portLine.toString().trim()}/bench/`, STORE_ACCESS_KEY: "S3RVER", STORE_SECRET_KEY: "S3RVER" })!;
  const client = openS3Client(settings);
  const rssBefore = process.memoryUsage().rss;
  let peakRss = rssBefore;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  const started = performance.now();
  await uploadFile(client, settings.bucket, "bench.wacz", file, size);
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  client.destroy();
  const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);
  console.log(JSON.stringify({
    mib: mb(size),
    partMib: mb(partSizeFor(size)),
    parts: Math.ceil(size / partSizeFor(size)),
    seconds: Math.round(seconds * 100) / 100,
    mibPerSecond: Math.round((mb(size) / seconds) * 10) / 10,
    uploaderRssMibBefore: mb(rssBefore),
    uploaderPeakRssMib: mb(peakRss),
  }));
} finally {
  server.kill();
  rmSync(dir, { recursive: true, force: true });
}
