import { describe, expect, it } from "vitest";
import { defaultPolicyReferer } from "../../../src/util/referrerPolicy.js";

describe("the Referer under strict-origin-when-cross-origin", () => {
  it("is the whole referrer to its own origin, without its fragment and credentials", () => {
    expect(defaultPolicyReferer("https://user:pw@example.com/a/page.html?q=1#part", "https://example.com/b.m3u8")).toBe("https://example.com/a/page.html?q=1");
  });

  it("is the referrer's origin elsewhere, nothing on a downgrade to http, nothing from no origin", () => {
    expect(defaultPolicyReferer("https://example.com/a/page.html", "https://cdn.example.net/v.ts")).toBe("https://example.com/");
    expect(defaultPolicyReferer("http://example.com/a/page.html", "https://cdn.example.net/v.ts")).toBe("http://example.com/");
    expect(defaultPolicyReferer("https://example.com/a/page.html", "http://example.com/v.ts")).toBeNull();
    expect(defaultPolicyReferer("data:text/html,x", "https://example.com/v.ts")).toBeNull();
    expect(defaultPolicyReferer("not a url", "https://example.com/v.ts")).toBeNull();
  });
});
