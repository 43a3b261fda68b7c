import puppeteer, { type Browser } from "puppeteer-core";
import { existsSync } from "node:fs";
import { chromiumHostResolverArgs } from "../fetch/addressPolicy.js";
import type { SocketGate } from "../fetch/socketGate.js";
import { errorMessage, logger } from "../log/logger.js";
import { chromiumProxyArgs } from "../proxy/activeProxies.js";
import { withTimeout } from "../util/deadline.js";
import { createProfileDir, killBrowserProcesses, removeProfileDir } from "./browserProcesses.js";
import type { BrowserRecords } from "./runningBrowsers.js";
import { executableWithDeathSignal } from "./deathSignal.js";

export interface LaunchOptions {
  executablePath: string;
  headless: boolean;
  userAgent?: string | null;
  /** More switches, after ours (--lang, --extraChromeArgs). */
  extraArgs?: readonly string[];
  /**
   * Fills the fresh user-data folder before Chromium starts (--profile: a login profile unpacked into it).
   * Runs at every launch, so each browser, a relaunch after a crash included, starts from its own copy.
   */
  prepareProfile?: (profileDir: string) => Promise<void>;
  /** Reads the user-data folder once the browser has exited, before it is removed (create-login-profile saves it). */
  beforeRemove?: (profileDir: string) => Promise<void>;
  /** The gate of the run's address policy (fetch/socketGate.ts), handed in by whoever runs the browser. */
  socketGate: SocketGate;
  /**
   * A crawl's browser: without a proxy, every connection it opens goes through the address policy's gate
   * (fetch/socketGate.ts), which resolves the name and connects only to approved addresses; Chromium never
   * resolves a name itself. Other browsers (create-login-profile, the --qa replay of a loopback server) send
   * only their WebSockets there.
   */
  gateEveryConnection?: boolean;
}

/** Flags that keep Chromium from phoning home (no network here but loopback) and from isolating frames. */
export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync",
  "--disable-gpu",
  "--disable-dev-shm-usage",
  "--disable-quic",
  "--mute-audio",
  "--no-default-browser-check",
  "--disable-breakpad",
  // Images and iframes with loading="lazy" load with the page, wherever they are (as in browsertrix-crawler):
  // the autoscroll behavior is then needed only for what scripts add.
  "--disable-lazy-loading",
  // Keep cross-origin iframes in the page's own target so one CDP session sees all their traffic. A headless
  // browser shows no omnibox: its WebUI popup, preloaded in a renderer of its own, would only cost CPU.
  "--disable-features=IsolateOrigins,site-per-process,Translate,MediaRouter,OptimizationHints,NetworkTimeServiceQuerying,WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup",
  "--disable-site-isolation-trials",
  // Cookies encrypted with Chromium's fixed key, never a desktop keyring: a profile made on one machine
  // (or by browsertrix-crawler, which starts Chromium the same way) reads on another.
  "--password-store=basic",
  "--use-mock-keychain",
  // No window at start: every user of the browser opens its own tabs, and the startup window's about:blank
  // would cost a renderer of its own at every launch.
  "--no-startup-window",
];

/**
 * The crawl's proxy; without one, the address policy's gate (fetch/socketGate.ts: every connection of a crawl's
 * browser, the WebSockets of others), unless the caller's switches set a proxy of their own
 * (create-login-profile --proxyServer, --extraChromeArgs).
 */
function browserProxyArgs(extraArgs: readonly string[], gate: SocketGate, gateEveryConnection: boolean): string[] {
  const proxy = chromiumProxyArgs();
  if (proxy.length) return proxy;
  return extraArgs.some((arg) => /^--(proxy-server|proxy-pac-url|no-proxy-server)(=|$)/.test(arg)) ? [] : gate.args(gateEveryConnection);
}

export interface LaunchedBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/** How long Chromium gets to close cleanly before it is killed. */
const CLOSE_DEADLINE_MS = 10_000;

/**
 * Start Chromium with a fresh profile (removed on close), so no cache or cookies leak between crawls.
 * The browser dies with this process (deathSignal.ts); with `records`, it is also recorded there until
 * closed, for the cleanup of a crawler that died anyway.
 */
export async function launchBrowser(options: LaunchOptions, records: BrowserRecords | null = null): Promise<LaunchedBrowser> {
  if (!existsSync(options.executablePath)) throw new Error(`cannot start Chromium at ${options.executablePath}: no such file`);
  const profileDir = createProfileDir();
  // Recorded before the spawn: a crawler killed during the launch still leaves a record of its profile.
  let recordFile: string | null = null;
  try {
    recordFile = records?.add(profileDir) ?? null;
  } catch (err) {
    logger.warn("browser", `cannot record the browser in ${records?.dir}: ${errorMessage(err)}`);
  }
  const discard = () => {
    try {
      removeProfileDir(profileDir);
      if (recordFile) records?.remove(recordFile);
    } catch (err) {
      logger.warn("browser", `cannot remove the browser profile or its record: ${errorMessage(err)}`, { profileDir });
    }
  };
  try {
    await options.prepareProfile?.(profileDir);
  } catch (err) {
    discard();
    throw new Error(`cannot set up the browser profile: ${errorMessage(err)}`);
  }
  const proxyArgs = browserProxyArgs(options.extraArgs ?? [], options.socketGate, options.gateEveryConnection === true);
  // The gate's own resolver rules (no name resolved by Chromium at all) replace the test host map.
  const resolverArgs = proxyArgs.some((arg) => arg.startsWith("--host-resolver-rules=")) ? [] : chromiumHostResolverArgs();
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath: executableWithDeathSignal(options.executablePath, profileDir),
      headless: options.headless,
      userDataDir: profileDir,
      args: [...CHROMIUM_ARGS, ...resolverArgs, ...proxyArgs, ...(options.userAgent ? [`--user-agent=${options.userAgent}`] : []), ...(options.extraArgs ?? [])],
      defaultViewport: { width: 1366, height: 900 },
      waitForInitialPage: false, // --no-startup-window
      protocolTimeout: 120_000,
      // No Audits domain: nothing reads its issues, and a page can raise thousands (the rust std docs: an
      // accessibility issue per <summary> element, 5,800 a page), each a CDP message to parse.
      issuesEnabled: false,
      // The crawler handles signals itself: it must finish writing before the browser goes away.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (err) {
    await killBrowserProcesses(profileDir);
    discard();
    const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new Error(`cannot start Chromium at ${options.executablePath}: ${message}`);
  }
  const pid = browser.process()?.pid;
  try {
    if (recordFile && pid !== undefined) records?.setBrowserPid(recordFile, pid);
  } catch (err) {
    logger.warn("browser", `cannot record the browser's pid: ${errorMessage(err)}`);
  }
  logger.info("browser", "Chromium started", { pid: pid ?? null, profileDir });
  return {
    browser,
    async close() {
      // A close that fails (browser crashed already) is as good as done; one that hangs is cut short.
      const closing = browser.close().then(() => true, () => true);
      if (!(await withTimeout(closing, CLOSE_DEADLINE_MS, "deadline").catch(() => false))) {
        logger.warn("browser", `Chromium did not close within ${CLOSE_DEADLINE_MS / 1000}s: killing it`, { pid: pid ?? null });
      }
      // Whatever is left of it (all of it after the deadline, a straggling child after a clean close).
      await killBrowserProcesses(profileDir);
      try {
        await options.beforeRemove?.(profileDir);
      } finally {
        discard();
      }
    },
  };
}
