import puppeteer, { type Browser } from "puppeteer-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface LaunchOptions {
  executablePath: string;
  headless: boolean;
  userAgent?: string | null;
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
  // Keep cross-origin iframes in the page's own target so one CDP session sees all their traffic.
  "--disable-features=IsolateOrigins,site-per-process,Translate,MediaRouter,OptimizationHints",
  "--disable-site-isolation-trials",
];

export interface LaunchedBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/** Start Chromium with a fresh profile (removed on close), so no cache or cookies leak between crawls. */
export async function launchBrowser(options: LaunchOptions): Promise<LaunchedBrowser> {
  const profileDir = mkdtempSync(join(tmpdir(), "crawler-profile-"));
  let browser: Browser;
  try {
    browser = await puppeteer.launch({
      executablePath: options.executablePath,
      headless: options.headless,
      userDataDir: profileDir,
      args: [...CHROMIUM_ARGS, ...(options.userAgent ? [`--user-agent=${options.userAgent}`] : [])],
      defaultViewport: { width: 1366, height: 900 },
      protocolTimeout: 120_000,
      // The crawler handles signals itself: it must finish writing before the browser goes away.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
    });
  } catch (err) {
    rmSync(profileDir, { recursive: true, force: true });
    const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
    throw new Error(`cannot start Chromium at ${options.executablePath}: ${message}`);
  }
  return {
    browser,
    async close() {
      await browser.close().catch(() => undefined);
      rmSync(profileDir, { recursive: true, force: true });
    },
  };
}
