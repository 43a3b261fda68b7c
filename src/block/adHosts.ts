import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

/**
 * --blockAds: the hosts of EasyList (ads) and EasyPrivacy (trackers), as Debian's uBlock Origin package
 * ships them (webext-ublock-origin-chromium, or the Firefox one; installed by scripts/setup.sh and the
 * Dockerfile): no network fetch at run time, updated with the system's packages. Only the lists' rules that
 * name a whole host are taken (`||host^`, alone or with type or third-party options): a host list, as
 * browsertrix-crawler's (Steven Black's hosts), not an adblock engine. Exceptions that allow a whole host
 * everywhere (`@@||host^`) are honoured; those tied to some sites or paths are not.
 */
export interface AdHostList {
  /** Which lists, from where, which version: for the log and the stats. */
  name: string;
  version: string;
  source: string;
  /** Hosts listed (exceptions not counted). */
  size: number;
  /** The listed host `host` is, or is under (`a.doubleclick.net` under `doubleclick.net`); null if none. */
  match(host: string): string | null;
}

/** Where Debian's uBlock Origin packages keep their filter lists. */
export const UBLOCK_ORIGIN_DIRS = [
  "/usr/share/chromium/extensions/ublock-origin",
  "/usr/share/mozilla/extensions/{ec8030f7-c20a-464f-9b0e-13a3a9e97384}/uBlock0@raymondhill.net",
];
const LISTS = ["easylist.txt", "easyprivacy.txt"];
const DEBIAN_PACKAGES = ["webext-ublock-origin-chromium", "webext-ublock-origin-firefox"];

/** Options a host rule may carry and still block the host for any page: resource types and third-party. */
const NEUTRAL_OPTIONS = new Set([
  "third-party", "3p", "important", "script", "image", "stylesheet", "css", "xmlhttprequest", "xhr", "subdocument", "frame",
  "media", "object", "font", "ping", "websocket", "other", "document", "doc", "all",
]);

/** A rule naming a whole host, on a line of its own: `||host^`, `||host^$options`, `@@||host^...` (an exception). */
const HOST_RULE = /^(@@)?\|\|([a-z0-9][a-z0-9.-]*\.[a-z0-9-]+)\^(?:\$([^\r\n]*))?\r?$/gm;

export class HostSet implements AdHostList {
  constructor(
    readonly name: string,
    readonly version: string,
    readonly source: string,
    private readonly blocked: ReadonlySet<string>,
    private readonly allowed: ReadonlySet<string>,
  ) {}

  get size(): number {
    return this.blocked.size;
  }

  match(host: string): string | null {
    let name = host.toLowerCase();
    if (name.endsWith(".")) name = name.slice(0, -1);
    let found: string | null = null;
    // From the host itself up to its last two labels: an exception anywhere on the way allows it.
    for (let suffix = name; suffix.includes("."); suffix = suffix.slice(suffix.indexOf(".") + 1)) {
      if (this.allowed.has(suffix)) return null;
      if (found === null && this.blocked.has(suffix)) found = suffix;
    }
    return found;
  }
}

/** The host rules of adblock filter list texts: hosts blocked and hosts allowed everywhere. */
export function hostRules(texts: Iterable<string>): { blocked: Set<string>; allowed: Set<string> } {
  const blocked = new Set<string>();
  const allowed = new Set<string>();
  // One pass of a multi-line regex over each list: a few times faster than splitting it into lines.
  for (const text of texts) {
    for (const rule of text.matchAll(HOST_RULE)) {
      const options = rule[3] ? rule[3].split(",") : [];
      // `$popup` only, `$domain=` (some sites), `$~third-party`, `$redirect=`...: not "this host, anywhere".
      if (!options.every((o) => NEUTRAL_OPTIONS.has(o) || (o.startsWith("~") && NEUTRAL_OPTIONS.has(o.slice(1)) && o !== "~third-party"))) continue;
      (rule[1] ? allowed : blocked).add(rule[2]);
    }
  }
  return { blocked, allowed };
}

function debianVersion(): string | null {
  for (const pkg of DEBIAN_PACKAGES) {
    const changelog = `/usr/share/doc/${pkg}/changelog.Debian.gz`;
    if (!existsSync(changelog)) continue;
    const first = gunzipSync(readFileSync(changelog)).toString("utf8").split("\n", 1)[0];
    const version = /\(([^)]+)\)/.exec(first)?.[1];
    if (version) return `${pkg} ${version}`;
  }
  return null;
}

export class AdHostsUnavailableError extends Error {}

let loaded: AdHostList | null = null;

/** The ad host list, read once per process (about 85,000 hosts); AdHostsUnavailableError when no package has it. */
export function loadAdHosts(dirs: readonly string[] = UBLOCK_ORIGIN_DIRS): AdHostList {
  if (loaded && dirs === UBLOCK_ORIGIN_DIRS) return loaded;
  const dir = dirs.find((d) => LISTS.every((list) => existsSync(join(d, "assets/thirdparties/easylist", list))));
  if (!dir) {
    throw new AdHostsUnavailableError(
      `--blockAds needs the EasyList and EasyPrivacy lists of Debian's uBlock Origin package (apt-get install --no-install-recommends webext-ublock-origin-chromium; scripts/setup.sh installs it): not found in ${dirs.join(" or ")}`,
    );
  }
  const lists = LISTS.map((list) => join(dir, "assets/thirdparties/easylist", list));
  const { blocked, allowed } = hostRules(lists.map((path) => readFileSync(path, "utf8")));
  let extension = "";
  try {
    extension = `uBlock Origin ${(JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8")) as { version?: string }).version ?? "?"}`;
  } catch {
    extension = "uBlock Origin (version unknown)";
  }
  const debian = dirs === UBLOCK_ORIGIN_DIRS ? debianVersion() : null;
  const list = new HostSet("EasyList + EasyPrivacy (host rules)", debian ? `${extension}, Debian ${debian}` : extension, join(dir, "assets/thirdparties/easylist"), blocked, allowed);
  if (dirs === UBLOCK_ORIGIN_DIRS) loaded = list;
  return list;
}
