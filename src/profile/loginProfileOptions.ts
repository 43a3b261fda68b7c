import { isAbsolute, resolve } from "node:path";

/** create-login-profile's flags as commander hands them over. */
export interface RawLoginProfileFlags {
  url?: string;
  user?: string;
  password?: string;
  filename?: string;
  debugScreenshot?: string | boolean;
  headless?: boolean;
  headful?: boolean;
  automated?: boolean;
  interactive?: boolean;
  shutdownWait?: string;
  postLoadDelay?: string;
  profile?: string;
  windowSize?: string;
  cookieDays?: string;
  proxyServer?: string;
  port?: string;
  browserPath?: string;
}

export interface LoginProfileOptions {
  /** The login page. */
  url: string;
  user: string | null;
  password: string | null;
  /** Log in by filling the form found on the page (--automated, or --user/--password given); else the interactive page. */
  automated: boolean;
  /** Where the profile tar.gz is written. */
  filename: string;
  /** Where a screenshot is saved after the login (automated), if asked for. */
  debugScreenshot: string | null;
  headless: boolean;
  /** Interactive: exit after this many seconds without a ping from the page; 0 = never. */
  shutdownWaitSeconds: number;
  postLoadDelaySeconds: number;
  /** An existing profile to start from (path or http(s) URL): the new one extends it. */
  profile: string | null;
  windowSize: { width: number; height: number };
  /** Before saving, every cookie (session cookies too) is set to expire this many days later; 0 = left as they are. */
  cookieDays: number;
  proxyServer: string | null;
  /** The interactive page's address and port (127.0.0.1 unless an address is given). */
  listen: { host: string; port: number };
  browserPath: string;
}

export class LoginProfileOptionsError extends Error {}

/** browsertrix-crawler's default: profiles/profile.tar.gz under the crawls folder (/crawls in its image, ./crawls here). */
export const DEFAULT_PROFILE_FILENAME = "profile.tar.gz";
const PROFILES_DIR = "crawls/profiles";

/** The default window (and viewport) size: the crawl's viewport. */
export const DEFAULT_WINDOW_SIZE = { width: 1366, height: 900 };
export const DEFAULT_INTERACTIVE_PORT = 9223;

function loginNumberFlag(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < min) throw new LoginProfileOptionsError(`--${name} must be a number of at least ${min}, got ${JSON.stringify(value)}`);
  return n;
}

/** `--windowSize 1280,720` (browsertrix-crawler's form; `1280x720` too). */
export function parseWindowSize(value: string | undefined): { width: number; height: number } {
  if (value === undefined) return { ...DEFAULT_WINDOW_SIZE };
  const match = /^\s*(\d{2,5})\s*[,x]\s*(\d{2,5})\s*$/.exec(value);
  if (!match) throw new LoginProfileOptionsError(`--windowSize takes width,height in pixels (e.g. 1280,720), got ${JSON.stringify(value)}`);
  return { width: Number(match[1]), height: Number(match[2]) };
}

/** `--port 9223` (on 127.0.0.1) or `--port 0.0.0.0:9223` / `[::]:9223` (that address). */
export function parseListen(value: string | undefined): { host: string; port: number } {
  if (value === undefined) return { host: "127.0.0.1", port: DEFAULT_INTERACTIVE_PORT };
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^:[\]]+):)?(\d{1,5})$/.exec(value.trim());
  const port = match ? Number(match[2]) : NaN;
  if (!match || port > 65535) throw new LoginProfileOptionsError(`--port takes a port, or address:port (e.g. 9223 or 0.0.0.0:9223), got ${JSON.stringify(value)}`);
  return { host: match[1]?.replace(/^\[(.*)\]$/, "$1") ?? "127.0.0.1", port };
}

/** Where the profile goes: as browsertrix-crawler, a relative --filename is taken under crawls/profiles/. */
export function profileFilename(value: string | undefined, cwd = process.cwd()): string {
  const name = value?.trim() || DEFAULT_PROFILE_FILENAME;
  if (/^https?:\/\//i.test(name)) throw new LoginProfileOptionsError(`--filename must be a local path, got ${JSON.stringify(value)}`);
  return isAbsolute(name) ? name : resolve(cwd, PROFILES_DIR, name);
}

export function resolveLoginProfileOptions(flags: RawLoginProfileFlags, env: NodeJS.ProcessEnv = process.env): LoginProfileOptions {
  if (!flags.url) throw new LoginProfileOptionsError("--url (the login page) is required");
  let url: URL;
  try {
    url = new URL(flags.url);
  } catch {
    throw new LoginProfileOptionsError(`--url must be an http(s) URL, got ${JSON.stringify(flags.url)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new LoginProfileOptionsError(`--url must be an http(s) URL, got ${JSON.stringify(flags.url)}`);
  const screenshot = flags.debugScreenshot;
  return {
    url: url.href,
    user: flags.user ?? null,
    password: flags.password ?? null,
    // As in browsertrix-crawler: giving a user name or password means the automated login.
    automated: !!(flags.automated || flags.user !== undefined || flags.password !== undefined),
    filename: profileFilename(flags.filename),
    debugScreenshot: screenshot === undefined || screenshot === false ? null : screenshot === true ? resolve("debug-screenshot.png") : resolve(screenshot),
    headless: !flags.headful,
    shutdownWaitSeconds: loginNumberFlag("shutdownWait", flags.shutdownWait, 0, 0),
    postLoadDelaySeconds: loginNumberFlag("postLoadDelay", flags.postLoadDelay, 0, 0),
    profile: flags.profile?.trim() || null,
    windowSize: parseWindowSize(flags.windowSize),
    cookieDays: loginNumberFlag("cookieDays", flags.cookieDays, 7, 0),
    // As the crawl: PROXY_SERVER when the flag is not given (a password there stays off the command line).
    proxyServer: flags.proxyServer?.trim() || env.PROXY_SERVER?.trim() || null,
    listen: parseListen(flags.port),
    browserPath: flags.browserPath ?? env.BROWSER_BIN ?? "/usr/bin/chromium",
  };
}
