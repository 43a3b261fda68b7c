import { createHash } from "node:crypto";
import { appendFile, copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WARCRecord, WARCSerializer } from "warcio";
import { ExportError, exportFormatOf, exportWaczSet, writeSetManifest, writeSetWacz } from "../../../src/replay/exportSet.js";
import { resolveWaczSet } from "../../../src/replay/resolveSet.js";
import type { SetMember, WaczSet } from "../../../src/replay/waczSet.js";
import { SOFTWARE } from "../../../src/version.js";
import { manifestEntries } from "../../../src/wacz/manifest.js";
import { writeWacz } from "../../../src/wacz/index.js";
import { readZip } from "../../helpers/zip.js";

// Two crawls of one site: one.wacz holds /red.png; two.wacz (which requires one.wacz) holds a revisit of it at
// another URL, /sky.png, as a crawl deduplicated against one writes it.
const SITE = "http://127.0.0.1:8080";
const RED = Buffer.from("red pixels ".repeat(60));

let dir: string;
let members: string;
let one: { path: string; hash: string; size: number };
let two: { path: string; hash: string; size: number };
let set: WaczSet;

const sha256 = (bytes: Uint8Array | string): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`;

async function appendRecord(warc: string, record: WARCRecord): Promise<void> {
  await appendFile(warc, await WARCSerializer.serialize(record, { gzip: true }));
}

function response(url: string, date: string, body: Buffer, type: string): WARCRecord {
  return WARCRecord.create(
    { url, date, type: "response", warcVersion: "WARC/1.1", statusline: "HTTP/1.1 200 OK", httpHeaders: { "Content-Type": type, "Content-Length": String(body.length) } },
    [body],
  );
}

const html = (title: string): Buffer => Buffer.from(`<!doctype html><title>${title}</title><h1>${title}</h1>`);
const page = (id: string, path: string, ts: string, title: string): string => JSON.stringify({ id, url: `${SITE}${path}`, ts, title, text: title });

async function crawlWacz(name: string, build: (warc: string) => Promise<void>, pages: string[], extraPages: string[], requires?: Parameters<typeof writeWacz>[0]["requires"]) {
  const work = await mkdtemp(join(dir, `${name}-`));
  const warc = join(work, `rec-${name}.warc.gz`);
  await build(warc);
  await writeFile(join(work, "pages.jsonl"), [JSON.stringify({ format: "json-pages-1.0", id: "pages", title: "All Pages", hasText: true }), ...pages].join("\n") + "\n");
  await writeFile(join(work, "extraPages.jsonl"), [JSON.stringify({ format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages" }), ...extraPages].join("\n") + "\n");
  const written = await writeWacz({
    outputPath: join(members, `${name}.wacz`),
    warcFiles: [warc],
    pagesFile: join(work, "pages.jsonl"),
    extraPagesFile: join(work, "extraPages.jsonl"),
    software: "test",
    requires,
  });
  return { path: written.path, hash: written.hash, size: written.size };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "export-set-"));
  members = join(dir, "members");
  await mkdir(members);
  one = await crawlWacz(
    "one",
    async (warc) => {
      await appendRecord(warc, response(`${SITE}/`, "2024-05-01T10:00:00Z", html("Home, one"), "text/html"));
      await appendRecord(warc, response(`${SITE}/red.png`, "2024-05-01T10:00:01Z", RED, "image/png"));
    },
    [page("p1", "/", "2024-05-01T10:00:00Z", "Home, one")],
    [],
  );
  const redDigest = sha256(RED);
  two = await crawlWacz(
    "two",
    async (warc) => {
      await appendRecord(warc, response(`${SITE}/`, "2024-06-01T10:00:00Z", html("Home, two"), "text/html"));
      await appendRecord(warc, response(`${SITE}/c.html`, "2024-06-01T10:00:01Z", html("Page C"), "text/html"));
      await appendRecord(
        warc,
        WARCRecord.create({
          url: `${SITE}/sky.png`, date: "2024-06-01T10:00:02Z", type: "revisit", warcVersion: "WARC/1.1",
          statusline: "HTTP/1.1 200 OK", httpHeaders: { "Content-Type": "image/png" },
          refersToUrl: `${SITE}/red.png`, refersToDate: "2024-05-01T10:00:01Z",
          warcHeaders: { "WARC-Payload-Digest": redDigest, "WARC-Refers-To-Container": "file://one.wacz" },
        }),
      );
    },
    [page("p2", "/", "2024-06-01T10:00:00Z", "Home, two")],
    [page("p3", "/c.html", "2024-06-01T10:00:01Z", "Page C")],
    [{ filename: "one.wacz", hash: one.hash, size: one.size, crawlId: "one" }],
  );
  set = await resolveWaczSet([two.path], { cwd: dir, from: [], store: null });
});

afterAll(async () => {
  await set.dispose();
  await rm(dir, { recursive: true, force: true });
});

/** A fresh folder to export into. */
const exportFolder = (): Promise<string> => mkdtemp(join(dir, "out-"));

describe("the set exported as one WACZ", () => {
  it("holds every member's WARC files byte for byte, one plain index over them all, and their pages, every entry stored", async () => {
    const out = await exportFolder();
    const exported = await exportWaczSet(set, join(out, "set.wacz"));

    expect(await readdir(out)).toEqual(["set.wacz"]);
    const bytes = await readFile(join(out, "set.wacz"));
    expect(exported).toEqual({
      path: join(out, "set.wacz"),
      format: "wacz",
      hash: sha256(bytes),
      size: bytes.length,
      members: [
        { name: "one.wacz", hash: one.hash, size: one.size },
        { name: "two.wacz", hash: two.hash, size: two.size },
      ],
    });

    const zip = await readZip(join(out, "set.wacz"));
    expect([...zip.keys()]).toEqual([
      "archive/rec-one.warc.gz",
      "archive/rec-two.warc.gz",
      "indexes/index.cdxj",
      "pages/pages.jsonl",
      "pages/extraPages.jsonl",
      "datapackage.json",
      "datapackage-digest.json",
    ]);
    for (const { entry } of zip.values()) expect(entry.compressionMethod, entry.fileName).toBe(0);

    const oneZip = await readZip(one.path);
    const twoZip = await readZip(two.path);
    expect(zip.get("archive/rec-one.warc.gz")!.data.equals(oneZip.get("archive/rec-one.warc.gz")!.data)).toBe(true);
    expect(zip.get("archive/rec-two.warc.gz")!.data.equals(twoZip.get("archive/rec-two.warc.gz")!.data)).toBe(true);

    // The members' own index lines, sorted together: nothing re-addressed, nothing lost.
    const memberLines = [oneZip, twoZip].flatMap((m) => m.get("indexes/index.cdxj")!.data.toString().split("\n").filter(Boolean));
    const index = zip.get("indexes/index.cdxj")!.data.toString();
    expect(index).toBe([...memberLines].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))).join("\n") + "\n");
    expect(index.split("\n").filter(Boolean).map((line) => line.split(" ")[0])).toEqual([
      "1,0,0,127:8080)/",
      "1,0,0,127:8080)/",
      "1,0,0,127:8080)/c.html",
      "1,0,0,127:8080)/red.png",
      "1,0,0,127:8080)/sky.png",
    ]);

    // The source's pages first: the main page is its own.
    expect(zip.get("pages/pages.jsonl")!.data.toString()).toBe(
      [
        JSON.stringify({ format: "json-pages-1.0", id: "pages", title: "All Pages", hasText: true }),
        page("p2", "/", "2024-06-01T10:00:00Z", "Home, two"),
        page("p1", "/", "2024-05-01T10:00:00Z", "Home, one"),
      ].join("\n") + "\n",
    );
    expect(zip.get("pages/extraPages.jsonl")!.data.toString()).toBe(
      [JSON.stringify({ format: "json-pages-1.0", id: "extra-pages", title: "Extra Pages" }), page("p3", "/c.html", "2024-06-01T10:00:01Z", "Page C")].join("\n") + "\n",
    );

    const datapackage = JSON.parse(zip.get("datapackage.json")!.data.toString()) as Record<string, unknown>;
    expect(datapackage).toEqual({
      profile: "data-package",
      wacz_version: "1.1.1",
      created: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      software: SOFTWARE,
      description: `The WACZ files one.wacz (${one.hash}, ${one.size} bytes), two.wacz (${two.hash}, ${two.size} bytes), in one`,
      mainPageUrl: `${SITE}/`,
      mainPageDate: "2024-06-01T10:00:00Z",
      resources: [...zip.values()]
        .filter(({ entry }) => !entry.fileName.startsWith("datapackage"))
        .map(({ entry, data }) => ({ name: entry.fileName.split("/").pop(), path: entry.fileName, hash: sha256(data), bytes: data.length })),
    });
    expect(JSON.parse(zip.get("datapackage-digest.json")!.data.toString())).toEqual({ path: "datapackage.json", hash: sha256(zip.get("datapackage.json")!.data) });
  });

  it("replaces an existing file only with a whole WACZ: a failed export leaves it as it was, and no temporary file", async () => {
    const out = await exportFolder();
    const target = join(out, "set.wacz");
    await writeFile(target, "the export before");

    // A member that turns out not to be a readable zip: the export fails while reading it.
    const broken = join(out, "broken.wacz");
    await writeFile(broken, "not a zip");
    const brokenSet: WaczSet = {
      ...set,
      members: [{ ...memberOf("one.wacz"), path: broken, where: broken, hash: sha256("not a zip"), size: 9 }, memberOf("two.wacz")],
    };
    await expect(writeSetWacz(brokenSet, target)).rejects.toThrow(new ExportError(`${broken}: not a zip file (no end-of-central-directory record; not a zip, or truncated)`));
    expect(await readFile(target, "utf8")).toBe("the export before");
    expect((await readdir(out)).sort()).toEqual(["broken.wacz", "set.wacz"]);

    // A member changed since the set was checked: refused before anything is written.
    const changed = join(out, "changed.wacz");
    await copyFile(one.path, changed);
    await appendFile(changed, "more");
    const changedSet: WaczSet = { ...set, members: [{ ...memberOf("one.wacz"), path: changed, where: changed }, memberOf("two.wacz")] };
    await expect(writeSetWacz(changedSet, target)).rejects.toThrow(`${changed} changed since it was checked: ${one.size + 4} bytes, not ${one.size} bytes`);
    expect(await readFile(target, "utf8")).toBe("the export before");
    expect((await readdir(out)).sort()).toEqual(["broken.wacz", "changed.wacz", "set.wacz"]);

    await writeSetWacz(set, target);
    expect((await readZip(target)).has("indexes/index.cdxj")).toBe(true);
    expect((await readdir(out)).sort()).toEqual(["broken.wacz", "changed.wacz", "set.wacz"]);
  });

  it("exports a set of one as the WACZ itself, byte for byte", async () => {
    const out = await exportFolder();
    const alone = await resolveWaczSet([one.path], { cwd: dir, from: [], store: null });
    const exported = await writeSetWacz(alone, join(out, "alone.wacz"));
    expect((await readFile(join(out, "alone.wacz"))).equals(await readFile(one.path))).toBe(true);
    expect(exported).toEqual({ path: join(out, "alone.wacz"), format: "wacz", hash: one.hash, size: one.size, members: [{ name: "one.wacz", hash: one.hash, size: one.size }] });
    expect(await readdir(out)).toEqual(["alone.wacz"]);
  });

  it("refuses a set with a WACZ missing, an export over a member of the set, and two members with a WARC file of one name", async () => {
    const out = await exportFolder();
    const missing: WaczSet = { ...set, members: [memberOf("two.wacz")], missing: [{ name: "one.wacz", hash: one.hash, size: one.size, requiredBy: ["two.wacz"], looked: [`${members}: not there`] }] };
    await expect(writeSetWacz(missing, join(out, "set.wacz"))).rejects.toThrow(
      new ExportError(`the set is not whole, so it is not exported: one.wacz (${one.hash}, ${one.size} bytes), required by two.wacz, was not found: looked in ${members}: not there`),
    );
    await expect(writeSetManifest(missing, join(out, "set.json"))).rejects.toThrow(ExportError);

    await expect(writeSetWacz(set, one.path)).rejects.toThrow(new ExportError(`${one.path} is one.wacz, a WACZ of the set: export to another file`));
    expect(await sha256OfPath(one.path)).toBe(one.hash);

    const twin = join(out, "twin.wacz");
    await copyFile(one.path, twin);
    const twins: WaczSet = { ...set, members: [memberOf("one.wacz"), { ...memberOf("one.wacz"), name: "twin.wacz", path: twin, where: twin }] };
    await expect(writeSetWacz(twins, join(out, "set.wacz"))).rejects.toThrow(new ExportError("one.wacz and twin.wacz both hold a WARC file named rec-one.warc.gz: one index cannot tell them apart"));
    expect((await readdir(out)).sort()).toEqual(["twin.wacz"]);

    await expect(exportWaczSet(set, join(out, "set.zip"))).rejects.toThrow(new ExportError(`${join(out, "set.zip")}: an export is a .wacz or a .json file`));
  });
});

describe("the set exported as a multi-WACZ JSON manifest", () => {
  it("lists every member, dependencies first and marked, at paths relative to the manifest", async () => {
    const out = await exportFolder();
    const target = join(out, "set.json");
    const exported = await exportWaczSet(set, target);
    const text = await readFile(target, "utf8");
    expect(text).toBe(
      JSON.stringify(
        {
          profile: "multi-wacz-package",
          resources: [
            { name: "one.wacz", path: "../members/one.wacz", hash: one.hash, size: one.size, crawlId: "one", fromDependency: true },
            { name: "two.wacz", path: "../members/two.wacz", hash: two.hash, size: two.size },
          ],
        },
        null,
        2,
      ) + "\n",
    );
    expect(exported).toEqual({ path: target, format: "manifest", hash: sha256(text), size: Buffer.byteLength(text), members: exported.members });
    expect(await readdir(out)).toEqual(["set.json"]);

    // Read back as `replay` reads it: the same set, the same source.
    const { entries } = manifestEntries(JSON.parse(text), pathToFileURL(target));
    expect(entries.map((e) => e.location.href)).toEqual([pathToFileURL(one.path).href, pathToFileURL(two.path).href]);
    const again = await resolveWaczSet([target], { cwd: out, from: [], store: null });
    try {
      expect(again.members.map((m) => ({ name: m.name, hash: m.hash, path: m.path, isSource: m.isSource }))).toEqual(
        set.members.map((m) => ({ name: m.name, hash: m.hash, path: m.path, isSource: m.isSource })),
      );
    } finally {
      await again.dispose();
    }
  });

  it("lists a member downloaded over http(s) by its URL, and refuses one found only in the S3 store", async () => {
    const out = await exportFolder();
    const fetched: WaczSet = { ...set, members: [{ ...memberOf("one.wacz"), where: "https://archive.example/crawls/one.wacz" }, memberOf("two.wacz")] };
    await writeSetManifest(fetched, join(out, "set.json"));
    const listed = JSON.parse(await readFile(join(out, "set.json"), "utf8")) as { resources: { path: string }[] };
    expect(listed.resources.map((r) => r.path)).toEqual(["https://archive.example/crawls/one.wacz", "../members/two.wacz"]);

    const inS3: WaczSet = { ...set, members: [{ ...memberOf("one.wacz"), where: "s3://bucket/crawls/one.wacz" }, memberOf("two.wacz")] };
    await expect(writeSetManifest(inS3, join(out, "s3.json"))).rejects.toThrow(
      new ExportError("one.wacz is in the S3 store (s3://bucket/crawls/one.wacz), which a JSON manifest cannot point to: export a .wacz instead"),
    );
    expect(await readdir(out)).toEqual(["set.json"]);
  });

  it("takes its format from the file name", () => {
    expect(exportFormatOf("a/set.WACZ")).toBe("wacz");
    expect(exportFormatOf("set.json")).toBe("manifest");
  });
});

function memberOf(name: string): SetMember {
  const member = set.members.find((m) => m.name === name);
  if (!member) throw new Error(`no member ${name}`);
  return member;
}

async function sha256OfPath(path: string): Promise<string> {
  return sha256(await readFile(path));
}
