import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, CDPSession, Page, Protocol } from "puppeteer-core";
import { launchBrowser, type LaunchedBrowser } from "../browser/launch.js";
import { answerProxyChallengesOf } from "../capture/requests/proxyAuth.js";
import { AddressPolicy } from "../fetch/addressPolicy.js";
import { SocketGate } from "../fetch/socketGate.js";
import { startProxies, stopProxies } from "../proxy/activeProxies.js";
import { proxySettings } from "../proxy/proxySettings.js";
import { errorMessage, logger } from "../log/logger.js";
import { openCrawlProfile, unpackInto, type CrawlProfile } from "./crawlProfile.js";
import type { LoginProfileOptions } from "./loginProfileOptions.js";
import { packProfile, PROFILE_INFO_FILE, type ProfileInfo } from "./profileArchive.js";

/**
 * The browser create-login-profile logs in with: Chromium on a fresh user-data folder (or a copy of
 * --profile), one tab, and save(), which closes it and writes the folder as the profile tar.gz.
 */
export class LoginBrowser {
  private saved = false;

  private constructor(
    readonly browser: Browser,
    readonly page: Page,
    readonly cdp: CDPSession,
    private readonly launched: LaunchedBrowser,
    private readonly options: LoginProfileOptions,
    private readonly base: CrawlProfile | null,
    private readonly saveTo: { file: string | null },
  ) {}

  static async start(options: LoginProfileOptions): Promise<LoginBrowser> {
    const base = options.profile ? await openCrawlProfile(options.profile, null) : null;
    const saveTo: { file: string | null } = { file: null };
    const { width, height } = options.windowSize;
    // CHROME_FLAGS reach this browser too, as in browsertrix-crawler (split at spaces, as there).
    const extraArgs = [...(process.env.CHROME_FLAGS ?? "").split(" ").filter(Boolean), `--window-size=${width},${height}`];
    // Chromium goes through the crawl's loopback relay (launchBrowser gives it the switch), which alone
    // holds the proxy's credentials: a --proxy-server with user:password@ would show them to `ps` (and
    // Chromium ignores them there).
    if (options.proxyServer) await startProxies(proxySettings({ proxyServer: options.proxyServer }, {}), undefined, { relayAlways: true });
    // Its WebSockets go through a gate of the policy outside a crawl (no seeds: a local site may be logged in to).
    const socketGate = await SocketGate.start(AddressPolicy.outsideACrawl());
    let launched: LaunchedBrowser;
    try {
      const browser = await launchBrowser({
        socketGate,
        executablePath: options.browserPath,
        headless: options.headless,
        extraArgs,
        ...(base ? { prepareProfile: unpackInto(base.path) } : {}),
        beforeRemove: async (profileDir) => {
          if (!saveTo.file) return;
          const info: ProfileInfo = { loginUrl: options.url, created: new Date().toISOString() };
          writeFileSync(join(profileDir, PROFILE_INFO_FILE), JSON.stringify(info) + "\n");
          await packProfile(profileDir, saveTo.file);
        },
      });
      launched = { browser: browser.browser, close: () => browser.close().finally(() => socketGate.close()) };
    } catch (err) {
      await socketGate.close();
      base?.dispose();
      await stopProxies();
      throw err;
    }
    const [existing] = await launched.browser.pages();
    const page = existing ?? (await launched.browser.newPage());
    await page.setViewport({ width, height });
    const cdp = await page.createCDPSession();
    // The relay's challenges, answered with its own credentials (the one tab: the site's windows open in it).
    await answerProxyChallengesOf(cdp);
    return new LoginBrowser(launched.browser, page, cdp, launched, options, base, saveTo);
  }

  /**
   * Close the browser and write its profile to --filename (mode 0600). Before that, the HTTP cache is
   * cleared (as browsertrix-crawler does) and, with --cookieDays, every cookie, session cookies too, is
   * made to last that many days: Chromium drops session cookies when it closes, and a login is usually one.
   */
  async save(): Promise<string> {
    if (this.saved) throw new Error("the profile is saved already");
    this.saved = true;
    await this.cdp.send("Network.clearBrowserCache").catch((err: unknown) => logger.warn("profile", `cannot clear the browser cache: ${errorMessage(err)}`));
    if (this.options.cookieDays > 0) await this.extendCookies(this.options.cookieDays);
    this.saveTo.file = this.options.filename;
    try {
      await this.launched.close();
    } finally {
      this.base?.dispose();
      await stopProxies();
    }
    return this.options.filename;
  }

  /** Close without saving. */
  async discard(): Promise<void> {
    this.saveTo.file = null;
    try {
      await this.launched.close();
    } finally {
      this.base?.dispose();
      await stopProxies();
    }
  }

  /** Every cookie of the browser expires `days` from now. Values are never logged: they are the login. */
  private async extendCookies(days: number): Promise<void> {
    const session = await this.browser.target().createCDPSession();
    try {
      const { cookies } = await session.send("Storage.getCookies");
      const expires = Date.now() / 1000 + days * 86400;
      await session.send("Storage.setCookies", { cookies: cookies.map((cookie) => cookieParam(cookie, expires)) });
      logger.info("profile", "cookies kept for the profile", { cookies: cookies.length, days });
    } finally {
      await session.detach().catch(() => undefined);
    }
  }
}

/** A cookie as Storage.setCookies takes it back, expiring at `expires` (seconds since the epoch). */
export function cookieParam(cookie: Protocol.Network.Cookie, expires: number): Protocol.Network.CookieParam {
  return {
    name: cookie.name,
    value: cookie.value,
    domain: cookie.domain,
    path: cookie.path,
    secure: cookie.secure,
    httpOnly: cookie.httpOnly,
    // SameSite=None needs Secure; browsertrix-crawler drops any other value than Lax and Strict too.
    ...(cookie.sameSite === "Lax" || cookie.sameSite === "Strict" || (cookie.sameSite === "None" && cookie.secure) ? { sameSite: cookie.sameSite } : {}),
    expires,
    priority: cookie.priority,
    sourceScheme: cookie.sourceScheme,
    sourcePort: cookie.sourcePort,
    ...(cookie.partitionKey ? { partitionKey: cookie.partitionKey } : {}),
  };
}
