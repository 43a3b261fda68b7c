import yauzl from "yauzl";

export interface ZipEntryData {
  entry: yauzl.Entry;
  data: Buffer;
}

/** Every entry of a zip file with its bytes (test-sized archives only). */
export async function readZip(path: string): Promise<Map<string, ZipEntryData>> {
  const zip = await yauzl.openPromise(path, { lazyEntries: true });
  const out = new Map<string, ZipEntryData>();
  for await (const entry of zip.eachEntry()) {
    const stream = await zip.openReadStreamPromise(entry);
    const chunks: Buffer[] = [];
    for await (const c of stream) chunks.push(c as Buffer);
    out.set(entry.fileName, { entry, data: Buffer.concat(chunks) });
  }
  zip.close();
  return out;
}
