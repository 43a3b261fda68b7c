import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KnownDevices } from "puppeteer-core";
import { afterAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { resolveCrawlOptions, type CrawlOptions } from "../../../src/config/crawlOptions.js";
import { browserSetupOf } from "../../../src/config/groups/pageLoadOptions.js";
import { acceptLanguageHeader, resolveUserAgent, setupChromiumArgs } from "../../../src/browser/pageSetup.js";

const dir = mkdtempSync(join(tmpdir(), "pageload-options-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function optionsFrom(args: string[]): CrawlOptions {
  const program = buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  return resolveCrawlOptions(crawlFlags(program, ["--url", "http://a.test/", ...args], "user", {}), {});
}

function config(text: string): string {
  const path = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(path, text);
  return path;
}

describe("page load options", () => {
  it("defaults: load, then the net-idle wait with nothing in flight; browser as it is", () => {
    expect(optionsFrom([]).pageLoad).toEqual({ waitUntil: ["load"], netIdleMaxRequests: 0, lang: null, userAgentSuffix: null, mobileDevice: null, extraChromeArgs: [], requestHeaders: [] });
  });

  it("--waitUntil takes comma lists, repeated flags and YAML lists; duplicates once", () => {
    expect(optionsFrom(["--waitUntil", "load,networkidle2", "--waitUntil", "load"]).pageLoad.waitUntil).toEqual(["load", "networkidle2"]);
    expect(optionsFrom(["--config", config("waitUntil: [domcontentloaded, networkidle0]\n")]).pageLoad.waitUntil).toEqual(["domcontentloaded", "networkidle0"]);
    expect(() => optionsFrom(["--waitUntil", "idle"])).toThrow(/--waitUntil takes a comma-separated list of load, domcontentloaded, networkidle0, networkidle2; got "idle"/);
  });

  it("--netIdleMaxRequests is a count", () => {
    expect(optionsFrom(["--netIdleMaxRequests", "2"]).pageLoad.netIdleMaxRequests).toBe(2);
    expect(optionsFrom(["--config", config("netIdleMaxRequests: 1\n")]).pageLoad.netIdleMaxRequests).toBe(1);
    expect(() => optionsFrom(["--netIdleMaxRequests", "-1"])).toThrow(/--netIdleMaxRequests must be a whole number/);
  });

  it("--lang takes BCP 47 codes of known languages (all of browsertrix-crawler's two-letter ones), canonical; empty is none", () => {
    expect(optionsFrom(["--lang", "de"]).pageLoad.lang).toBe("de");
    expect(optionsFrom(["--lang", "pt-br"]).pageLoad.lang).toBe("pt-BR");
    expect(optionsFrom(["--lang", "zh-Hans-CN"]).pageLoad.lang).toBe("zh-Hans-CN");
    expect(optionsFrom(["--config", config("lang: ''\n")]).pageLoad.lang).toBeNull();
    for (const bad of ["xx", "english", "en_US", "e"]) expect(() => optionsFrom(["--lang", bad]), bad).toThrow(/--lang must be a language code/);
    expect(acceptLanguageHeader("de-CH")).toBe("de-CH,de;q=0.9");
    expect(acceptLanguageHeader("de")).toBe("de");
  });

  it("--mobileDevice takes puppeteer's names, with a hyphen for a space as browsertrix-crawler does", () => {
    expect(optionsFrom(["--mobileDevice", "Pixel 2"]).pageLoad.mobileDevice).toEqual({ name: "Pixel 2", ...KnownDevices["Pixel 2"] });
    expect(optionsFrom(["--mobileDevice", "iPhone-X"]).pageLoad.mobileDevice?.name).toBe("iPhone X");
    expect(optionsFrom(["--mobileDevice", "iphone x landscape"]).pageLoad.mobileDevice?.name).toBe("iPhone X landscape");
    expect(() => optionsFrom(["--mobileDevice", "Nokia 3310"])).toThrow(/unknown device "Nokia 3310" \(like it: "Nokia Lumia 520", .*KnownDevices/);
  });

  it("the user agent: --userAgent as given; else the device's or the browser's, with the suffix", () => {
    const ua = (args: string[]) => resolveUserAgent(browserSetupOf(optionsFrom(args)), "Browser/1");
    expect(ua([])).toBeNull();
    expect(ua(["--userAgentSuffix", "+Me"])).toBe("Browser/1 +Me");
    expect(ua(["--mobileDevice", "Pixel 2"])).toBe(KnownDevices["Pixel 2"].userAgent);
    expect(ua(["--mobileDevice", "Pixel 2", "--userAgentSuffix", "+Zimit"])).toBe(`${KnownDevices["Pixel 2"].userAgent} +Zimit`);
    expect(ua(["--userAgent", "Mine/2", "--userAgentSuffix", "+Me", "--mobileDevice", "Pixel 2"])).toBe("Mine/2");
  });

  it("--extraChromeArgs are kept whole (commas in a switch's value), after the language switch", () => {
    const options = optionsFrom(["--extraChromeArgs", "--blink-settings=imagesEnabled=false,scriptEnabled=true", "--extraChromeArgs=--disable-gpu", "--lang", "fr"]);
    expect(setupChromiumArgs(browserSetupOf(options))).toEqual(["--accept-lang=fr", "--blink-settings=imagesEnabled=false,scriptEnabled=true", "--disable-gpu"]);
    expect(optionsFrom(["--config", config("extraChromeArgs: ['--a=1,2', '--b']\n")]).pageLoad.extraChromeArgs).toEqual(["--a=1,2", "--b"]);
  });
});
