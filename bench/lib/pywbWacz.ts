// A WACZ as other tools write it: the same WARC as writeSyntheticWacz, but its CDXJ index in the form
// pywb / warcio's cdxj-indexer print (Python's json.dumps: `", "` and `": "` separators, non-ASCII as
// \u escapes, every field a string, bare digests), stored plain or as ZipNum, so the indexer's speed can
// be measured on archives we did not write.
import { mkdtemp, rm } from "node:fs/promises";
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { iterWaczCdxj, openWacz } from "../../src/wacz/reader/index.js";
import { cdxjLineParts } from "../../src/wacz/cdxjLine.js";
import {
  buildDataPackage, buildDataPackageDigest, DATAPACKAGE_DIGEST_PATH, DATAPACKAGE_PATH, makeResource, serializeDataPackage,
  serializeDataPackageDigest,
} from "../../src/wacz/datapackage.js";
import { writeHeaderOnlyPages } from "../../src/wacz/pages.js";
import { writeStoredZip } from "../../src/wacz/storedZip.js";
import { writeCdxIndexes } from "../../src/wacz/zipnum.js";
import { writeSyntheticWacz, type SyntheticWaczOptions } from "./syntheticWacz.js";

/** Python's json.dumps of a string (ensure_ascii): JSON.stringify, then every non-ASCII code unit as \uXXXX. */
function pythonJsonString(value: string): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
}

/** One of our CDXJ lines in cdxj-indexer's form (same fields, same order, values as strings). */
export function toPywbLine(line: string): string {
  const { urlkey, timestamp, json } = cdxjLineParts(line);
  const fields = Object.entries(json).map(([key, value]) => `${pythonJsonString(key)}: ${pythonJsonString(String(value))}`);
  return `${urlkey} ${timestamp} {${fields.join(", ")}}`;
}

export interface PywbWacz {
  path: string;
  hash: string;
  size: number;
  cdxLines: number;
}

/** writeSyntheticWacz's archive, repackaged with a pywb-form index (`zipNum`: as ZipNum blocks, else indexes/index.cdxj). */
export async function writePywbWacz(options: SyntheticWaczOptions & { zipNum: boolean }): Promise<PywbWacz> {
  const work = await mkdtemp(join(options.dir, "pywb-"));
  try {
    const ours = await writeSyntheticWacz({ ...options, dir: work, plainIndex: true });
    const warcPath = join(work, options.name.replace(/\.wacz$/, "") + ".warc.gz");
    const lines: string[] = [];
    const reader = await openWacz(pathToFileURL(ours.path).href);
    try {
      for await (const line of iterWaczCdxj(reader)) lines.push(toPywbLine(line));
    } finally {
      await reader.close();
    }
    const indexes = await writeCdxIndexes(lines, work, { thresholdBytes: options.zipNum ? 0 : Number.MAX_SAFE_INTEGER });
    const pagesPath = join(work, "pages.jsonl");
    await writeHeaderOnlyPages(pagesPath);
    const outputPath = join(options.dir, options.name);
    const files = [{ zipPath: `archive/${basename(warcPath)}`, sourcePath: warcPath }, ...indexes, { zipPath: "pages/pages.jsonl", sourcePath: pagesPath }];
    const zip = await writeStoredZip(outputPath, files, (entries) => {
      const datapackage = serializeDataPackage(
        buildDataPackage({ resources: entries.map((e) => makeResource(e.zipPath, e.sha256, e.bytes)), software: "pywb-form synthetic" }),
      );
      return [
        { zipPath: DATAPACKAGE_PATH, data: datapackage },
        { zipPath: DATAPACKAGE_DIGEST_PATH, data: serializeDataPackageDigest(buildDataPackageDigest(datapackage)) },
      ];
    });
    return { path: outputPath, hash: `sha256:${zip.sha256}`, size: zip.size, cdxLines: lines.length };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
