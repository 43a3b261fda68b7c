import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ChangeReport, classifyChange, type ChangeKind } from "../../../src/reports/changeReport.js";
import { startTestRedis, type TestRedis } from "../../helpers/redis.js";

describe("classifyChange", () => {
  const page = (digest: string) => ({ status: 200, digest });
  const redirect = (location: string, status = 301) => ({ status, digest: "sha256:body", location });

  it("compares content by digest, redirects by status and Location", () => {
    expect(classifyChange(page("a"), page("a"))).toBe("unchanged");
    expect(classifyChange(page("a"), page("b"))).toBe("changed");
    expect(classifyChange(page("a"), { status: 304, digest: "a" })).toBe("unchanged");
    expect(classifyChange(redirect("/page/3"), { ...redirect("/page/3"), digest: "sha256:other" })).toBe("unchanged");
    expect(classifyChange(redirect("/page/3"), redirect("/page/4"))).toBe("changed");
    expect(classifyChange(redirect("/page/3"), redirect("/page/3", 302))).toBe("changed");
    expect(classifyChange(redirect("/page/3"), page("a"))).toBe("changed");
    expect(classifyChange(page("a"), redirect("/page/3"))).toBe("changed");
  });

  it("new for content and redirects without an archived capture; gone once, then unchanged", () => {
    expect(classifyChange(null, page("a"))).toBe("new");
    expect(classifyChange(null, redirect("/x"))).toBe("new");
    expect(classifyChange(null, { status: 404, digest: "x" })).toBeNull();
    expect(classifyChange(page("a"), { status: 404, digest: "x" })).toBe("gone");
    expect(classifyChange({ status: 410, digest: "x" }, { status: 404, digest: "y" })).toBe("unchanged");
    expect(classifyChange({ status: 500, digest: "x" }, { status: 500, digest: "x" })).toBe("unchanged");
    expect(classifyChange({ status: 500, digest: "x" }, { status: 503, digest: "x" })).toBe("changed");
  });
});

describe("ChangeReport", () => {
  let redis: TestRedis;
  let dir: string;
  beforeAll(async () => {
    redis = await startTestRedis();
    dir = mkdtempSync(join(tmpdir(), "change-report-"));
  });
  afterAll(async () => {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("appends every line to the file and counts each page once, by its latest kind", async () => {
    const path = join(dir, "reports", "changes.jsonl");
    const keys = { kinds: "t:changes:main", counts: "t:changecounts:main" };
    const report = new ChangeReport(path, redis.client, keys);
    const entry = (url: string, change: ChangeKind) => ({ url, change, status: 200, digest: null, previous: null });
    await report.add(entry("http://a.test/1", "new"));
    await report.add(entry("http://a.test/2", "changed"));
    await report.add(entry("http://a.test/3", "unchanged"));
    // Retried page: counted again only by its new kind.
    await report.add(entry("http://a.test/2", "unchanged"));
    expect(await report.summary()).toEqual({ new: 1, changed: 0, unchanged: 2, gone: 0, "skipped-fresh": 0 });
    // A resumed crawl (new object, same crawl state) goes on counting where it was.
    const resumed = new ChangeReport(path, redis.client, keys);
    await resumed.add(entry("http://a.test/4", "gone"));
    expect(await resumed.summary()).toEqual({ new: 1, changed: 0, unchanged: 2, gone: 1, "skipped-fresh": 0 });
    const lines = readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l) as { url: string; change: string });
    expect(lines.map((l) => [l.url.slice(-1), l.change])).toEqual([["1", "new"], ["2", "changed"], ["3", "unchanged"], ["2", "unchanged"], ["4", "gone"]]);
  });
});
