// The profile tar.gz (src/profile/profileArchive.ts): what goes in, what comes out, and what never does.
import { execFileSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { keptInArchive, listProfile, packProfile, PROFILE_INFO_FILE, readProfileInfo, unpackProfile } from "../../../src/profile/profileArchive.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "profile-archive-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A user-data folder as Chromium leaves it. */
function userData(root: string): void {
  mkdirSync(join(root, "Default", "Local Storage", "leveldb"), { recursive: true });
  mkdirSync(join(root, "Default", "Cache", "Cache_Data"), { recursive: true });
  mkdirSync(join(root, "Default", "Code Cache", "js"), { recursive: true });
  mkdirSync(join(root, "GrShaderCache"), { recursive: true });
  writeFileSync(join(root, "Local State"), "{}");
  writeFileSync(join(root, "Default", "Cookies"), "sqlite");
  writeFileSync(join(root, "Default", "Preferences"), "{}");
  writeFileSync(join(root, "Default", "Local Storage", "leveldb", "000003.log"), "storage");
  writeFileSync(join(root, "Default", "Cache", "Cache_Data", "data_0"), "cached");
  writeFileSync(join(root, "Default", "Code Cache", "js", "index"), "code");
  symlinkSync("host-1234", join(root, "SingletonLock"));
  symlinkSync("/tmp/nowhere", join(root, "SingletonSocket"));
}

describe("keptInArchive", () => {
  it("keeps the login (cookies, storage, preferences) and leaves out locks, caches and crash dumps", () => {
    for (const kept of ["./", ".", "Local State", "./Default/Cookies", "Default/Local Storage/leveldb/000003.log", "Default/Service Worker/Database/x", "Default/IndexedDB/x"]) expect(keptInArchive(kept), kept).toBe(true);
    for (const out of ["./SingletonLock", "SingletonCookie", "Default/Cache", "./Default/Cache/Cache_Data/data_0", "Default/Code Cache/js/x", "GrShaderCache/x", "Crashpad/reports", "Default/Service Worker/CacheStorage/x", "Default/GPUCache"]) expect(keptInArchive(out), out).toBe(false);
  });
});

describe("packProfile / unpackProfile", () => {
  it("writes a tar.gz of ./ entries, as browsertrix-crawler's `tar cvfz file ./`, mode 0600, and reads it back", async () => {
    const source = join(dir, "source");
    userData(source);
    const file = join(dir, "out", "profile.tar.gz");
    await packProfile(source, file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const names = await listProfile(file);
    expect(names).toEqual(expect.arrayContaining(["./", "./Local State", "./Default/", "./Default/Cookies", "./Default/Preferences", "./Default/Local Storage/leveldb/000003.log"]));
    expect(names.filter((n) => /Singleton|Cache/.test(n))).toEqual([]);
    // GNU tar reads it as it reads browsertrix-crawler's.
    expect(execFileSync("tar", ["tzf", file], { encoding: "utf8" }).split("\n")).toContain("./Default/Cookies");
    const target = join(dir, "target");
    mkdirSync(target);
    const result = await unpackProfile(file, target);
    expect(result.files).toBe(4);
    expect(readFileSync(join(target, "Default", "Cookies"), "utf8")).toBe("sqlite");
    expect(existsSync(join(target, "SingletonLock"))).toBe(false);
  });

  it("replaces an existing file whole and keeps it 0600", async () => {
    const source = join(dir, "source");
    userData(source);
    const file = join(dir, "profile.tar.gz");
    writeFileSync(file, "old", { mode: 0o644 });
    await packProfile(source, file);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await listProfile(file)).length).toBeGreaterThan(3);
  });

  it("unpacks a browsertrix-crawler profile made with GNU tar, skipping its lock symlinks", async () => {
    const source = join(dir, "source");
    userData(source);
    const file = join(dir, "btx.tar.gz");
    execFileSync("tar", ["cvfz", file, "./"], { cwd: source, stdio: "ignore" });
    const target = join(dir, "target");
    mkdirSync(target);
    const result = await unpackProfile(file, target);
    expect(result.skipped.sort()).toEqual(["SingletonLock", "SingletonSocket"]);
    expect(readFileSync(join(target, "Default", "Cookies"), "utf8")).toBe("sqlite");
    expect(() => lstatSync(join(target, "SingletonLock"))).toThrow();
  });

  it("never writes outside the folder: links, absolute names and .. are refused", async () => {
    const evil = join(dir, "evil");
    mkdirSync(join(evil, "Default"), { recursive: true });
    symlinkSync("/etc", join(evil, "Default", "etc-link"));
    writeFileSync(join(evil, "ok"), "ok");
    writeFileSync(join(evil, "x"), "escaped");
    writeFileSync(join(evil, "y"), "through the link");
    const file = join(dir, "evil.tar.gz");
    // A symlink, then a file written through it; and a ../ name (GNU tar keeps it with -P).
    execFileSync("tar", ["czf", file, "-P", "--transform", "s|^\\./x$|../escaped|;s|^\\./y$|./Default/etc-link/owned|", "./Default", "./ok", "./x", "./y"], { cwd: evil });
    expect(execFileSync("tar", ["tzf", file, "-P"], { encoding: "utf8" })).toContain("../escaped");
    const target = join(dir, "target", "inner");
    mkdirSync(target, { recursive: true });
    const result = await unpackProfile(file, target).catch((err: unknown) => err as Error);
    expect(existsSync(join(target, "Default", "etc-link"))).toBe(false);
    expect(existsSync(join(dir, "target", "escaped"))).toBe(false);
    expect(existsSync("/etc/owned")).toBe(false);
    if (!(result instanceof Error)) expect(result.skipped).toContain("Default/etc-link");
  });

  it("refuses a file that is not a tar.gz, an empty archive, and one that unpacks too large", async () => {
    const junk = join(dir, "junk.tar.gz");
    writeFileSync(junk, "this is not a tarball at all".repeat(40));
    const target = join(dir, "t");
    mkdirSync(target);
    await expect(unpackProfile(junk, target)).rejects.toThrow(/tar\.gz/);
    await expect(readProfileInfo(junk)).rejects.toThrow();
    const source = join(dir, "source");
    userData(source);
    writeFileSync(join(source, "Default", "big"), Buffer.alloc(100_000));
    const file = join(dir, "p.tar.gz");
    await packProfile(source, file);
    await expect(unpackProfile(file, target, 50_000)).rejects.toThrow(/more than/);
  });

  it("reads the login page create-login-profile notes, and null for a profile without it", async () => {
    const source = join(dir, "source");
    userData(source);
    const plain = join(dir, "plain.tar.gz");
    await packProfile(source, plain);
    expect(await readProfileInfo(plain)).toBeNull();
    writeFileSync(join(source, PROFILE_INFO_FILE), JSON.stringify({ loginUrl: "https://example.org/login", created: "2026-01-01T00:00:00Z" }));
    const noted = join(dir, "noted.tar.gz");
    await packProfile(source, noted);
    expect(await readProfileInfo(noted)).toEqual({ loginUrl: "https://example.org/login", created: "2026-01-01T00:00:00Z" });
  });
});
