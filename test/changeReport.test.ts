import { describe, expect, it } from "vitest";
import { classifyChange } from "../src/crawl/changeReport.js";

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
