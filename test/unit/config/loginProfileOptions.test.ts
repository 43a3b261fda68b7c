// Flags of create-login-profile and of crawl's logins, the login-page rule, the interactive page's input.
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { isLoginPage } from "../../../src/capture/pageAnswers.js";
import { parseLoginProfileArgs } from "../../../src/cli/createLoginProfile.js";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { tabCaptureOptions } from "../../../src/config/groups/tabCaptureOptions.js";
import { compatWarnings } from "../../../src/config/browsertrix/flags.js";
import { OptionsError } from "../../../src/config/optionsError.js";
import { profileOptions } from "../../../src/config/groups/profileOptions.js";
import { cookieParam } from "../../../src/profile/loginBrowser.js";
import { LoginProfileOptionsError, parseListen, parseWindowSize, profileFilename } from "../../../src/profile/loginProfileOptions.js";
import { parseRemoteInput } from "../../../src/profile/remoteInput.js";

const parse = (...args: string[]) => parseLoginProfileArgs(args, {});

describe("create-login-profile flags", () => {
  it("defaults as browsertrix-crawler 1.14.1: interactive, crawls/profiles/profile.tar.gz, 7 cookie days, no shutdown wait", () => {
    const { options, warnings } = parse("--url", "https://example.org/login");
    expect(options).toMatchObject({
      url: "https://example.org/login", user: null, password: null, automated: false, headless: true,
      filename: resolve("crawls/profiles/profile.tar.gz"), debugScreenshot: null, shutdownWaitSeconds: 0, postLoadDelaySeconds: 0,
      profile: null, windowSize: { width: 1366, height: 900 }, cookieDays: 7, proxyServer: null, listen: { host: "127.0.0.1", port: 9223 },
      browserPath: "/usr/bin/chromium",
    });
    expect(warnings).toEqual([]);
  });

  it("a user name or password means the automated login, as there; every btx flag is taken", () => {
    expect(parse("--url", "https://e.org/login", "--user", "alice").options.automated).toBe(true);
    expect(parse("--url", "https://e.org/login", "--password", "x").options.automated).toBe(true);
    expect(parse("--url", "https://e.org/login", "--automated").options.automated).toBe(true);
    const { options, warnings } = parse("--url", "https://e.org/login", "--user", "alice", "--password", "pw", "--filename", "/tmp/p.tar.gz",
      "--debugScreenshot", "shot.png", "--headless", "--interactive", "--shutdownWait", "30", "--postLoadDelay", "2", "--profile", "https://e.org/base.tar.gz",
      "--windowSize", "1280,720", "--cookieDays", "0", "--proxyServer", "socks5://127.0.0.1:1080", "--proxyServerConfig", "p.yaml",
      "--sshProxyPrivateKeyFile", "k", "--sshProxyKnownHostsFile", "h", "--port", "0.0.0.0:9300");
    expect(options).toMatchObject({
      user: "alice", password: "pw", filename: "/tmp/p.tar.gz", debugScreenshot: resolve("shot.png"), shutdownWaitSeconds: 30, postLoadDelaySeconds: 2,
      profile: "https://e.org/base.tar.gz", windowSize: { width: 1280, height: 720 }, cookieDays: 0, proxyServer: "socks5://127.0.0.1:1080",
      listen: { host: "0.0.0.0", port: 9300 },
    });
    expect(warnings).toEqual(["proxyServerConfig", "sshProxyPrivateKeyFile", "sshProxyKnownHostsFile"].map((f) => `accepted for browsertrix-crawler compatibility but not implemented yet: --${f}`));
    expect(parse("--url", "https://e.org/", "--debugScreenshot").options.debugScreenshot).toBe(resolve("debug-screenshot.png"));
  });

  it("refuses what it cannot use", () => {
    expect(() => parse()).toThrow(LoginProfileOptionsError);
    expect(() => parse("--url", "ftp://e.org/")).toThrow(/http\(s\)/);
    expect(() => parse("--url", "https://e.org/", "--windowSize", "big")).toThrow(/width,height/);
    expect(() => parse("--url", "https://e.org/", "--cookieDays", "-1")).toThrow(/cookieDays/);
    expect(() => parse("--url", "https://e.org/", "--port", "99999")).toThrow(/--port/);
    expect(() => parse("--url", "https://e.org/", "--filename", "https://e.org/up")).toThrow(/local path/);
  });

  it("parses window sizes, listen addresses and file names", () => {
    expect(parseWindowSize("1024x768")).toEqual({ width: 1024, height: 768 });
    expect(parseListen("0")).toEqual({ host: "127.0.0.1", port: 0 });
    expect(parseListen("[::1]:9223")).toEqual({ host: "::1", port: 9223 });
    expect(profileFilename("site.tar.gz", "/w")).toBe("/w/crawls/profiles/site.tar.gz");
    expect(profileFilename(undefined, "/w")).toBe("/w/crawls/profiles/profile.tar.gz");
    expect(profileFilename("/abs/p.tar.gz", "/w")).toBe("/abs/p.tar.gz");
  });
});

describe("crawl --profile, --loginUrl", () => {
  it("--profile and browsertrix-crawler's --loadProfile are one flag, --saveProfile takes a value or none; none is warned about", () => {
    for (const flag of ["--profile", "--loadProfile"]) {
      const program = buildCrawlProgram().exitOverride();
      const flags = crawlFlags(program, ["--url", "https://e.org/", flag, "p.tar.gz", "--loginUrl", "https://e.org/login"], "user", {});
      expect(flags.profile).toBe("p.tar.gz");
      expect(flags.loginUrl).toBe("https://e.org/login");
      expect(compatWarnings(program)).toEqual([]);
    }
    const program = buildCrawlProgram().exitOverride();
    expect(crawlFlags(program, ["--url", "https://e.org/", "--saveProfile"], "user", {}).saveProfile).toBe(true);
    expect(compatWarnings(program)).toEqual([]);
  });

  it("--saveProfile: a path (relative: under <cwd>/profiles/), or back into the --profile file", () => {
    const cwd = "/w/crawls";
    expect(profileOptions({ saveProfile: "/p/out.tar.gz" }, cwd).saveProfile).toBe("/p/out.tar.gz");
    expect(profileOptions({ saveProfile: "out.tar.gz" }, cwd).saveProfile).toBe("/w/crawls/profiles/out.tar.gz");
    expect(profileOptions({ saveProfile: true, profile: "mine.tar.gz" }, cwd).saveProfile).toBe(resolve("mine.tar.gz"));
    expect(profileOptions({ saveProfile: true, profile: "https://e.org/p.tar.gz" }, cwd).saveProfile).toBe("/w/crawls/profiles/profile.tar.gz");
    expect(profileOptions({ saveProfile: false }, cwd).saveProfile).toBeNull();
    expect(() => profileOptions({ saveProfile: "https://e.org/up.tar.gz" }, cwd)).toThrow(OptionsError);
  });

  it("profileOptions checks --loginUrl; disabled-if-profile bypasses service workers only with a profile", () => {
    expect(profileOptions({})).toEqual({ archive: null, loginUrl: null, saveProfile: null });
    expect(profileOptions({ profile: "p.tar.gz", loginUrl: "https://e.org/login" })).toEqual({ archive: "p.tar.gz", loginUrl: "https://e.org/login", saveProfile: null });
    expect(() => profileOptions({ loginUrl: "/login" })).toThrow(OptionsError);
    expect(tabCaptureOptions({ serviceWorker: "disabled-if-profile" }).bypassServiceWorker).toBe(false);
    expect(tabCaptureOptions({ serviceWorker: "disabled-if-profile", profile: "p.tar.gz" }).bypassServiceWorker).toBe(true);
  });

  it("a login page is the login URL's origin and path, whatever its query", () => {
    expect(isLoginPage("https://e.org/login?next=%2Fa", "https://e.org/login")).toBe(true);
    expect(isLoginPage("https://e.org/login/", "https://e.org/login")).toBe(true);
    expect(isLoginPage("https://e.org/login#x", "https://e.org/login?x=1")).toBe(true);
    expect(isLoginPage("https://e.org/loginhelp", "https://e.org/login")).toBe(false);
    expect(isLoginPage("https://other.org/login", "https://e.org/login")).toBe(false);
    expect(isLoginPage("http://e.org/login", "https://e.org/login")).toBe(false);
  });
});

describe("the interactive page's input", () => {
  it("takes mouse, wheel, key and text events and nothing else", () => {
    expect(parseRemoteInput({ kind: "mouse", type: "mousePressed", x: 10, y: 20 })).toEqual({ kind: "mouse", type: "mousePressed", x: 10, y: 20, button: "left", clickCount: 1, modifiers: 0 });
    expect(parseRemoteInput({ kind: "mouse", type: "mouseMoved", x: 1, y: 2 })).toMatchObject({ button: "none", clickCount: 0 });
    expect(parseRemoteInput({ kind: "wheel", x: 1, y: 2, deltaX: 0, deltaY: 120 })).toMatchObject({ deltaY: 120 });
    expect(parseRemoteInput({ kind: "key", type: "keyDown", key: "a", code: "KeyA", keyCode: 65, text: "a", modifiers: 8 })).toEqual({ kind: "key", type: "keyDown", key: "a", code: "KeyA", keyCode: 65, text: "a", modifiers: 8 });
    expect(parseRemoteInput({ kind: "text", text: "pasted" })).toEqual({ kind: "text", text: "pasted" });
    for (const bad of [null, "x", {}, { kind: "mouse", type: "mousePressed", x: "1", y: 2 }, { kind: "mouse", type: "drag", x: 1, y: 2 }, { kind: "key", type: "keyDown", key: "x".repeat(40) }, { kind: "eval", code: "1" }]) {
      expect(parseRemoteInput(bad)).toBeNull();
    }
  });

  it("cookies kept for the profile: every one gets the expiry, SameSite=None only when Secure", () => {
    const base = { name: "s", value: "v", domain: "e.org", path: "/", expires: -1, size: 2, httpOnly: true, secure: false, session: true, priority: "Medium" as const, sameParty: false, sourceScheme: "NonSecure" as const, sourcePort: 80 };
    expect(cookieParam({ ...base, sameSite: "Lax" }, 1000)).toEqual({ name: "s", value: "v", domain: "e.org", path: "/", secure: false, httpOnly: true, sameSite: "Lax", expires: 1000, priority: "Medium", sourceScheme: "NonSecure", sourcePort: 80 });
    expect(cookieParam({ ...base, sameSite: "None" }, 1000)).not.toHaveProperty("sameSite");
    expect(cookieParam({ ...base, secure: true, sameSite: "None" }, 1000)).toHaveProperty("sameSite", "None");
  });
});
