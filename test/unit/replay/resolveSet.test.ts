// Resolving a source into its set: relation.requires followed transitively, each file found by name or by size and
// hash, checked, in dependency order; what is missing named with every place looked.
import { createHash } from "node:crypto";
import { copyFileSync, createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import yazl from "yazl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveWaczSet, ReplaySourceError } from "../../../src/replay/resolveSet.js";
import { missingLine } from "../../../src/replay/waczSet.js";

let root: string;
const hashOf = (path: string): string => `sha256:${createHash("sha256").update(readFileSync(path)).digest("hex")}`;
const sizeOf = (path: string): number => readFileSync(path).length;
const requirement = (path: string, filename: string, crawlId = filename.replace(/\.wacz$/, "")) => ({ filename, hash: hashOf(path), size: sizeOf(path), crawlId });

/** A WACZ as far as resolution reads one: a zip holding datapackage.json (with relation.requires when given). */
async function wacz(path: string, requires: object[] = [], filler = ""): Promise<string> {
  const zip = new yazl.ZipFile();
  const pkg = { profile: "data-package", wacz_version: "1.1.1", resources: [], filler, ...(requires.length ? { relation: { requires } } : {}) };
  zip.addBuffer(Buffer.from(JSON.stringify(pkg)), "datapackage.json", { compress: false });
  zip.end();
  await new Promise<void>((done, fail) => zip.outputStream.pipe(createWriteStream(path)).on("close", done).on("error", fail));
  return path;
}

const places = (cwd: string) => ({ cwd, from: [], store: null });

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "resolve-set-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("resolveWaczSet", () => {
  it("follows requires transitively across collections, dependencies first, each once with who requires it", async () => {
    const cwd = join(root, "diamond");
    for (const c of ["a", "b", "c"]) mkdirSync(join(cwd, "collections", c), { recursive: true });
    const a = await wacz(join(cwd, "collections", "a", "a.wacz"));
    const b = await wacz(join(cwd, "collections", "b", "b.wacz"), [requirement(a, "a.wacz")]);
    const c = await wacz(join(cwd, "collections", "c", "c.wacz"), [requirement(b, "b.wacz"), requirement(a, "a.wacz")]);
    const set = await resolveWaczSet([join(cwd, "collections", "c")], places(join(root, "elsewhere")));
    try {
      expect(set.missing).toEqual([]);
      expect(set.members.map((m) => [m.name, m.hash, m.size, m.where, m.requiredBy, m.isSource, m.crawlId])).toEqual([
        ["a.wacz", hashOf(a), sizeOf(a), a, ["b.wacz", "c.wacz"], false, "a"],
        ["b.wacz", hashOf(b), sizeOf(b), b, ["c.wacz"], false, "b"],
        ["c.wacz", hashOf(c), sizeOf(c), c, [], true, undefined],
      ]);
    } finally {
      await set.dispose();
    }
  });

  it("ends a cycle of requires, and finds a file renamed since (same size and hash) in the folder looked in", async () => {
    const dir = join(root, "cycle");
    mkdirSync(dir);
    // x requires y; y, written after, requires x: x's requirement is y's bytes under its old name.
    const yFirst = await wacz(join(dir, "y-draft.wacz"), [], "draft");
    const x = await wacz(join(dir, "x.wacz"), [requirement(yFirst, "y.wacz")]);
    const set = await resolveWaczSet([x], places(join(root, "none")));
    try {
      expect(set.members.map((m) => [m.name, m.where, m.requiredBy])).toEqual([["y.wacz", yFirst, ["x.wacz"]], ["x.wacz", x, []]]);
    } finally {
      await set.dispose();
    }
    const other = join(root, "cycle2");
    mkdirSync(other);
    const p = await wacz(join(other, "p.wacz"), [{ filename: "q.wacz", crawlId: "q" }]);
    await wacz(join(other, "q.wacz"), [requirement(p, "p.wacz")]);
    const loop = await resolveWaczSet([p], places(join(root, "none")));
    try {
      expect(loop.members.map((m) => [m.name, m.requiredBy])).toEqual([["q.wacz", ["p.wacz"]], ["p.wacz", ["q.wacz"]]]);
    } finally {
      await loop.dispose();
    }
  });

  it("names a WACZ found nowhere with the right bytes, what requires it and each place looked", async () => {
    const cwd = join(root, "missing");
    mkdirSync(join(cwd, "collections", "old"), { recursive: true });
    mkdirSync(join(cwd, "collections", "new"), { recursive: true });
    const realOld = await wacz(join(root, "old-real.wacz"), [], "the real one");
    const newer = await wacz(join(cwd, "collections", "new", "new.wacz"), [requirement(realOld, "old.wacz")]);
    const sameSize = await wacz(join(cwd, "collections", "old", "old.wacz"), [], "the fake one");
    expect(sizeOf(sameSize)).toBe(sizeOf(realOld));
    const set = await resolveWaczSet([newer], places(cwd));
    try {
      expect(set.members.map((m) => m.name)).toEqual(["new.wacz"]);
      expect(set.missing.map(missingLine)).toEqual([
        `old.wacz (${hashOf(realOld)}, ${sizeOf(realOld)} bytes), required by new.wacz, was not found: looked in ${join(cwd, "collections", "new")}: not there; ` +
          `${join(cwd, "collections", "old")}: ${sameSize} has another hash (${hashOf(sameSize)}, not ${hashOf(realOld)})`,
      ]);
    } finally {
      await set.dispose();
    }
    // The real file copied into a collection folder under another name is found by size and hash.
    copyFileSync(realOld, join(cwd, "collections", "old", "renamed.wacz"));
    const found = await resolveWaczSet([newer], places(cwd));
    try {
      expect(found.missing).toEqual([]);
      expect(found.members.map((m) => [m.name, m.where])).toEqual([["old.wacz", join(cwd, "collections", "old", "renamed.wacz")], ["new.wacz", newer]]);
    } finally {
      await found.dispose();
    }
  });

  it("reads a manifest: listed hashes checked, dependencies it lists (fromDependency) are not sources", async () => {
    const dir = join(root, "manifest");
    mkdirSync(dir);
    const base = await wacz(join(dir, "base.wacz"));
    const top = await wacz(join(dir, "top.wacz"), [requirement(base, "base.wacz")]);
    writeFileSync(join(dir, "set.json"), JSON.stringify({ resources: [{ name: "top.wacz", path: "top.wacz", hash: hashOf(top) }, { name: "base.wacz", path: "base.wacz", fromDependency: true }] }));
    const set = await resolveWaczSet([join(dir, "set.json")], places(join(root, "none")));
    try {
      expect(set.members.map((m) => [m.name, m.isSource, m.requiredBy])).toEqual([["base.wacz", false, ["top.wacz"]], ["top.wacz", true, []]]);
    } finally {
      await set.dispose();
    }
    writeFileSync(join(dir, "wrong.json"), JSON.stringify({ resources: [{ name: "top.wacz", path: "top.wacz", size: 3 }] }));
    await expect(resolveWaczSet([join(dir, "wrong.json")], places(join(root, "none")))).rejects.toThrow(new ReplaySourceError(`${top}: has ${sizeOf(top)} bytes, not 3`));
    writeFileSync(join(dir, "broken.json"), "{");
    await expect(resolveWaczSet([join(dir, "broken.json")], places(join(root, "none")))).rejects.toThrow(/^.*broken\.json: not valid JSON/);
  });
});
