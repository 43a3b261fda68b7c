import { describe, expect, it } from "vitest";
import { debugOptions } from "../../../src/config/groups/debugOptions.js";
import { tabCaptureOptions, DEFAULT_RATE_LIMIT_ON_MATCH, parseOriginOverride, parseRateLimitRule } from "../../../src/config/groups/tabCaptureOptions.js";
import { OptionsError } from "../../../src/config/optionsError.js";

describe("tabCaptureOptions and debugOptions", () => {
  it("defaults as browsertrix-crawler: service workers bypassed, the Incapsula rule, nothing else", () => {
    const options = tabCaptureOptions({});
    expect(options).toMatchObject({ serviceWorker: "disabled", bypassServiceWorker: true, originOverride: [], saveStorage: false });
    expect(debugOptions({})).toEqual({ waitOnDone: false, debugAccessBrowser: false, debugAccessRedis: false });
    expect(options.rateLimitOnMatch).toEqual([{ regex: /src="\/_Incapsula_Resource?/, status: 200 }]);
    expect(DEFAULT_RATE_LIMIT_ON_MATCH).toEqual(['src="/_Incapsula_Resource?:200']);
  });

  it("disabled-if-profile uses service workers (no --profile here); a mode of another name is refused", () => {
    expect(tabCaptureOptions({ serviceWorker: "disabled-if-profile" }).bypassServiceWorker).toBe(false);
    expect(tabCaptureOptions({ serviceWorker: "enabled" }).bypassServiceWorker).toBe(false);
    expect(() => tabCaptureOptions({ serviceWorker: "on" })).toThrow(OptionsError);
  });

  it("--originOverride orig=new: origins only; anything else is refused", () => {
    expect(parseOriginOverride("https://example.com/path=http://127.0.0.1:8080/x")).toEqual({ from: "https://example.com", to: "http://127.0.0.1:8080" });
    for (const bad of ["https://example.com", "=http://a", "https://a=", "ftp://a=http://b", "a=b"]) expect(() => parseOriginOverride(bad)).toThrow(OptionsError);
  });

  it("--rateLimitOnMatch <regex>[:<status>]: the status after the last colon; an empty list means no rule", () => {
    expect(parseRateLimitRule("slow down")).toEqual({ regex: /slow down/, status: 0 });
    expect(parseRateLimitRule("a:b:429")).toEqual({ regex: /a:b/, status: 429 });
    expect(() => parseRateLimitRule("x:42")).toThrow(OptionsError);
    expect(() => parseRateLimitRule("(")).toThrow(/not a regular expression/);
    expect(tabCaptureOptions({ rateLimitOnMatch: [] }).rateLimitOnMatch).toEqual([]);
  });
});

