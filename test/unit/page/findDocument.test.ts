import { describe, expect, it } from "vitest";
import { internalRedirectReason } from "../../../src/capture/browserInternal.js";
import type { CapturedSummary } from "../../../src/capture/pageAttempt.js";
import { findDocument } from "../../../src/page/pageWorker.js";

const date = new Date("2026-01-02T03:04:05Z");
function document(url: string, status: number, location: string | null = null): CapturedSummary {
  return { url, status, mime: status === 200 ? "text/html" : "", resourceType: "Document", location, date };
}

describe("the page's document, through redirects the browser made by itself", () => {
  it("follows an upgrade to https:// (nothing captured for the http:// URL), then the server's redirects", () => {
    const captured = [document("https://a.example.com/", 301, "/home"), document("https://a.example.com/home", 200)];
    const upgrades = new Map([["http://a.example.com/", "https://a.example.com/"]]);
    expect(findDocument(captured, "http://a.example.com/", upgrades)).toEqual(document("https://a.example.com/home", 200));
    expect(findDocument(captured, "http://a.example.com/")).toBeNull();
  });

  it("takes what was captured under a URL before an upgrade noted for it, and stops on a loop", () => {
    const loop = new Map([["http://a.example.com/", "https://a.example.com/"], ["https://a.example.com/", "http://a.example.com/"]]);
    expect(findDocument([], "http://a.example.com/", loop)).toBeNull();
    const served = [document("http://a.example.com/", 200)];
    expect(findDocument(served, "http://a.example.com/", loop)).toEqual(document("http://a.example.com/", 200));
  });
});

describe("internalRedirectReason", () => {
  it("reads Chromium's Non-Authoritative-Reason from the Network domain's headers and the Fetch domain's entries", () => {
    expect(internalRedirectReason({ Location: "https://a.example.com/", "Non-Authoritative-Reason": "HttpsUpgrades" })).toBe("HttpsUpgrades");
    expect(internalRedirectReason([{ name: "Location", value: "https://a.example.com/" }, { name: "non-authoritative-reason", value: "HSTS" }])).toBe("HSTS");
    expect(internalRedirectReason([{ name: "Location", value: "https://a.example.com/" }])).toBeNull();
  });
});
