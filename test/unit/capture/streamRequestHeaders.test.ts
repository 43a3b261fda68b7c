import { describe, expect, it } from "vitest";
import { cookieHeader, streamFileHeaders } from "../../../src/capture/streamRequestHeaders.js";

const UA: [string, string] = ["User-Agent", "Mozilla/5.0 test"];
const LANG: [string, string] = ["Accept-Language", "de"];

describe("a stream file's request headers, from its manifest's request", () => {
  const manifest = {
    url: "https://site.test/video/master.m3u8",
    headers: [UA, LANG, ["Accept", "*/*"], ["Cookie", "sid=1"], ["Authorization", "Bearer t"], ["Referer", "https://site.test/watch?v=1"], ["sec-ch-ua", "x"]] as [string, string][],
  };

  it("on the manifest's origin: credentials, the whole Referer, no Origin; the browser's cookies when known", () => {
    expect(streamFileHeaders(manifest, "https://site.test/video/seg1.ts", null)).toEqual([
      UA, LANG, ["Authorization", "Bearer t"], ["Cookie", "sid=1"], ["Referer", "https://site.test/watch?v=1"],
    ]);
    expect(streamFileHeaders(manifest, "https://site.test/video/seg1.ts", "sid=1; cdn=2")).toContainEqual(["Cookie", "sid=1; cdn=2"]);
    expect(streamFileHeaders(manifest, "https://site.test/video/seg1.ts", "").some(([n]) => n === "Cookie")).toBe(false);
  });

  it("on another origin (another host, port or scheme): no credentials, the Referer's origin, an Origin", () => {
    for (const file of ["https://cdn.test/seg1.ts", "https://site.test:8443/seg1.ts"]) {
      expect(streamFileHeaders(manifest, file, "sid=1")).toEqual([UA, LANG, ["Referer", "https://site.test/"], ["Origin", "https://site.test"]]);
    }
    // From https to http: no Referer at all.
    expect(streamFileHeaders(manifest, "http://site.test/seg1.ts", "sid=1")).toEqual([UA, LANG, ["Origin", "https://site.test"]]);
  });

  it("the Origin the manifest's request carried is the player's, sent to every other origin", () => {
    const onCdn = { url: "https://cdn.test/master.m3u8", headers: [["Origin", "https://site.test"], ["Referer", "https://site.test/watch"]] as [string, string][] };
    expect(streamFileHeaders(onCdn, "https://cdn.test/seg1.ts", null)).toEqual([["Referer", "https://site.test/"], ["Origin", "https://site.test"]]);
    expect(streamFileHeaders(onCdn, "https://site.test/seg1.ts", null)).toEqual([["Referer", "https://site.test/watch"]]);
  });

  it("a Cookie header in the order a browser sends: longer paths first", () => {
    expect(cookieHeader([{ name: "a", value: "1", path: "/" }, { name: "b", value: "2", path: "/video" }, { name: "", value: "bare", path: "/" }])).toBe("b=2; a=1; bare");
  });
});
