/**
 * A set of dependent WACZ files rewritten with ZipNum indexes of a few lines a block: what a large crawl's WACZ
 * looks like to ReplayWeb.page (it loads an index block by block, only the blocks near the URL looked up), made
 * from a small crawl. Everything else of each WACZ is kept (its WARC files and pages byte for byte); its
 * datapackage.json lists the new index files, relation.requires the rewritten files' hashes and sizes, and
 * datapackage-digest.json the new datapackage.json.
 *
 *   await rewriteWithZipNum([one, two, three], outDir, 1);   // outDir/one.wacz, outDir/two.wacz, outDir/three.wacz
 */
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import {
  buildDataPackageDigest,
  makeResource,
  sha256OfFile,
  writeStoredZip,
  writeZipNumIndex,
  type DataPackageResource,
  type RelationRequirement,
  type ZipFileEntry,
} from "../../src/wacz/index.js";
import { readZip } from "./zip.js";

/** Rewrite `waczPaths` (dependencies first) into `outDir` under their own names; returns the new files' paths. */
export async function rewriteWithZipNum(waczPaths: readonly string[], outDir: string, linesPerBlock: number): Promise<string[]> {
  const rewritten = new Map<string, { hash: string; size: number }>();
  const written: string[] = [];
  for (const waczPath of waczPaths) {
    const name = basename(waczPath);
    const work = await mkdtemp(join(tmpdir(), "zipnum-set-"));
    try {
      const entries = await readZip(waczPath);
      const cdxj = entries.get("indexes/index.cdxj");
      if (!cdxj) throw new Error(`${waczPath} has no indexes/index.cdxj to rewrite`);
      const lines = cdxj.data.toString("utf8").split("\n").filter(Boolean);
      await writeZipNumIndex(lines, join(work, "index.cdx.gz"), join(work, "index.idx"), linesPerBlock);

      const files: ZipFileEntry[] = [];
      for (const [zipPath, entry] of entries) {
        if (zipPath === "indexes/index.cdxj" || zipPath === "datapackage.json" || zipPath === "datapackage-digest.json") continue;
        const sourcePath = join(work, `${files.length}-${basename(zipPath)}`);
        await writeFile(sourcePath, entry.data);
        files.push({ zipPath, sourcePath });
      }
      files.push({ zipPath: "indexes/index.cdx.gz", sourcePath: join(work, "index.cdx.gz") }, { zipPath: "indexes/index.idx", sourcePath: join(work, "index.idx") });

      const datapackage = JSON.parse(entries.get("datapackage.json")!.data.toString("utf8")) as {
        resources: DataPackageResource[];
        relation?: { requires: RelationRequirement[] };
      };
      const out = join(outDir, name);
      await writeStoredZip(out, files, (infos) => {
        datapackage.resources = infos.map((info) => makeResource(info.zipPath, info.sha256, info.bytes));
        for (const required of datapackage.relation?.requires ?? []) {
          const now = rewritten.get(required.filename);
          if (!now) throw new Error(`${name} requires ${required.filename}, which was not rewritten before it`);
          Object.assign(required, now);
        }
        const bytes = Buffer.from(JSON.stringify(datapackage, null, 2) + "\n");
        return [
          { zipPath: "datapackage.json", data: bytes },
          { zipPath: "datapackage-digest.json", data: Buffer.from(JSON.stringify(buildDataPackageDigest(bytes), null, 2) + "\n") },
        ];
      });
      rewritten.set(name, { hash: `sha256:${await sha256OfFile(out)}`, size: (await stat(out)).size });
      written.push(out);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  return written;
}
