#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, CommanderError, Option } from "commander";
import { OptionsError, type RawCrawlFlags } from "../config/crawlOptions.js";
import { applyConfig, readConfigFile } from "../config/configFile.js";
import { addBrowsertrixNames, compatWarnings, foldDottedFlags, setAsideUnimplementedValues } from "../config/browsertrix/flags.js";
import { withCrawlArgs } from "../config/browsertrix/crawlArgs.js";
import { configToSave, restoreWithheld, WITHHELD_KEY } from "../config/savedConfig.js";
import { checkedStateFile } from "../config/stateFile.js";
import { hideSecretsFromProcessList, registerSecrets, registerSecretsIn, scrubSecrets } from "../log/secrets.js";
import { SCOPE_TYPES } from "../scope/seedScope.js";
import { headerFlagSecrets } from "../config/groups/pageLoadOptions.js";
import { ExitCode } from "../lifecycle/exitCodes.js";
import { runCrawlCommand } from "../crawl/crawlCommand.js";
import { errorMessage } from "../log/logger.js";
import { VERSION } from "../version.js";
import { DEFAULT_DEDUPE_MIN_SIZE } from "../dedupe/deduplicator.js";
import { BEHAVIOR_NAMES, DEFAULT_BEHAVIORS } from "../behaviors/behaviors.js";
import { DEFAULT_AUTOSCROLL_MAX_ROUNDS } from "../behaviors/autoscroll.js";
import { DEFAULT_QA_THRESHOLD } from "../config/groups/outputOptions.js";

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function buildCrawlProgram(): Command {
  return addBrowsertrixNames(new Command("crawl")
    .description("Crawl a site in Chromium, write WARC/1.1 records and package them as WACZ 1.1.1.")
    .version(VERSION)
    .option("--config <path>", "YAML file setting any of these flags by name (e.g. pageLoadTimeout: 30), and seeds with their own scope; flags given here win; 'stdin' reads standard input")
    .option("--url <url...>", "seed URL (repeatable; several may follow one --url)", collect)
    .option("--seeds <urls...>", "seed URLs, comma- or space-separated (repeatable)", collect)
    .option("--seedFile <path>", "file (or http(s) URL) with one seed URL per line ('#' starts a comment)")
    .option("--crawlId <id>", "crawl id: prefixes every crawl-state key in Redis (default: env CRAWL_ID, else the collection name)")
    .option("--collection <name>", "collection name: output goes to <cwd>/collections/<name>/ (default: crawl-<timestamp>)")
    .option("--cwd <dir>", "working directory for output", "crawls")
    .addOption(new Option("--scopeType <type>", "which links are followed (default: prefix, or custom with --include)").choices([...SCOPE_TYPES]))
    .option("--include <regex>", "regex of URLs to include in scope (repeatable)", collect)
    .option("--exclude <regex>", "regex of URLs to exclude from scope (repeatable)", collect)
    .option("--depth <n>", "maximum link depth from a seed; -1 = unlimited", "-1")
    .option("--extraHops <n>", "links to follow beyond the scope's edge", "0")
    .option("--limit <n>", "maximum number of pages; 0 = unlimited", "0")
    .option("--timeLimit <seconds>", "stop taking new pages after this many seconds; 0 = unlimited", "0")
    .option("--sizeLimit <bytes>", "stop the crawl gracefully at this many WARC bytes (e.g. 500MB; checked while bodies are written, a body passing it is cut there); 0 = unlimited", "0")
    .option("--seedPageLimit <n>", "each seed's page budget (a --config seed's own `limit` wins): once that many of its pages are crawled (or being crawled), its further pages are neither queued nor started; reports/seeds.jsonl tells which seeds hit it; 0 = none", "0")
    .option("--seedSizeLimit <bytes>", "each seed's size budget (a --config seed's own `sizeLimit` wins): once this many WARC bytes are written for its pages (e.g. 100MB), none of its pages starts; 0 = none", "0")
    .option("--maxPagesPerHost <n>", "crawl at most this many pages on one host (host:port), whatever their seed, across all processes; 0 = no cap", "0")
    .option("--workers <n>", "browser tabs crawling in parallel in this process", "1")
    .addOption(new Option("--captureMode <mode>", "browser: every page is loaded in Chromium; hybrid: each template's first pages are, the others of a known template are fetched and parsed without a browser unless its guard sends them there (docs/user-guide/hybrid-capture.md)").choices(["browser", "hybrid"]).default("browser"))
    .option("--hybridLearnPages <n>", "with --captureMode hybrid: each template's first pages browsed and learned from, across all processes", "2")
    .option("--hybridVerifyEvery <n>", "with --captureMode hybrid: the first page of a template the guard lets through, then one in N since its last verify page, are browsed instead and the two compared; a miss sends the template back to the browser; 0 = never", "20")
    .option("--pageLoadTimeout <seconds>", "time allowed for a page's load event", "90")
    .option("--netIdleWait <seconds>", "after load, wait at most this long for the network to go quiet", "10")
    .option("--maxPageRetries <n>", "retries of a page that failed to load before it is recorded as failed", "2")
    .option("--pageExtraDelay <seconds>", "wait this long after each page (politeness)")
    .option("--minHostInterval <seconds>", "start page loads on the same host at least this far apart, across all crawler processes")
    .option("--failOnFailedLimit <n>", "stop the crawl (exit code 12) once this many pages have failed")
    .option("--generateWACZ", "package the collection as <collection>.wacz when the crawl ends")
    .option("--refresh", "re-crawl against the capture history: pages are requested with If-None-Match/If-Modified-Since, a 304 becomes a server-not-modified revisit, and reports/changes.jsonl lists what changed")
    .option("--skipFreshDays <days>", "do not fetch pages whose latest archived capture is younger than this (their archived links are still followed)")
    .option("--rolloverSize <bytes>", "start a new WARC file once one grows past this size (e.g. 1GB)", "1GB")
    .option("--redisStoreUrl <url>", "Redis holding the crawl state, one server or any node of a Redis Cluster (default: an embedded redis-server with its data in the collection)")
    .option("--redisDedupeUrl <url>", "Redis holding the dedupe index shared by crawls (default: the crawl-state Redis)")
    .option("--dedupeMinSize <bytes>", `payloads smaller than this are always stored in full (default: ${DEFAULT_DEDUPE_MIN_SIZE}; a revisit would be as large)`)
    .option("--userAgent <ua>", "User-Agent for the browser and direct fetches")
    .option("--header <header>", "add a request header, \"Name: value\" for every host or \"host Name: value\" for a host and its subdomains (repeatable; `headers:` by host in --config)", collect)
    .option("--title <title>", "title written to datapackage.json")
    .option("--description <text>", "description written to datapackage.json")
    .option("--statsFilename <path>", "write final crawl counts as JSON to this file")
    .option("--logging <list>", "comma-separated extras: stats (a statistics log line every 30s), debug (debug-level logs), stderr-json (JSON log lines on stderr even on a terminal, instead of a progress bar and readable warnings)", "stats")
    .option("--logLevel <levels>", "minimum log level: debug, info, warn or error (a browsertrix-crawler list of levels means its lowest)", "info")
    .option("--useSitemap [url]", "queue the pages the seeds' sitemaps list (in scope): from robots.txt Sitemap: lines, else /sitemap.xml, or this sitemap URL")
    .option("--sitemapFromDate <date>", "with --useSitemap: only pages whose <lastmod> is at or after this ISO date (pages without one are kept)")
    .option("--sitemapToDate <date>", "with --useSitemap: only pages whose <lastmod> is at or before this ISO date (a date keeps its whole day)")
    .option("--robots", "obey robots.txt: pages it disallows are counted as skipped and never fetched")
    .option("--robotsAgent <token>", "with --robots: the User-agent name robots.txt rules are looked up for (default: from --userAgent, else warc-crawler)")
    .option("--allowAddresses <list>", "also fetch these addresses, comma-separated, repeatable: IP ranges (10.1.0.0/16, 169.254.169.254) or loopback, private, link-local, metadata (default: public addresses, and loopback or private ones only if a seed is on one)", collect)
    .option("--browserPath <path>", "Chromium executable (default: env BROWSER_BIN, else /usr/bin/chromium)")
    .option("--headful", "show the browser window (needs a display)")
    // Logins (src/profile/, src/config/groups/profileOptions.ts)
    .option("--profile <path|url>", "start every browser of the crawl from this browser profile (a tar.gz made by create-login-profile or browsertrix-crawler; a path or an http(s) URL): its cookies and storage log the crawl in")
    .option("--saveProfile [path]", "when the crawl has finished (exit 0), save the browser's profile (its cookies as the crawl left them) to this tar.gz; without a value, to the --profile file; a relative path is taken under <cwd>/profiles/")
    .option("--loginUrl <url>", "the login page: a page redirected there has lost its session and is reported, not archived (default: the login page create-login-profile noted in the --profile)")
    .addOption(new Option("--text [targets]", "store each page's text: to-pages (pages.jsonl 'text', for full-text search), to-warc (a urn:text:<url> record); comma-separated, repeatable; alone: to-pages").preset("to-pages").argParser(collect))
    .option("--screenshot <kinds>", "store screenshots of each page as urn:<kind>:<url> records: view (viewport PNG), thumbnail (640px JPEG), fullPage (PNG); comma-separated, repeatable", collect)
    .option("--behaviors <list>", `in-page behaviors run on each page after it loads, comma-separated (${BEHAVIOR_NAMES.join(", ")}); "" for none`, DEFAULT_BEHAVIORS.join(","))
    .option("--behaviorTimeout <seconds>", "time allowed for a page's behaviors", "90")
    .option("--postLoadDelay <seconds>", "wait this long after a page has loaded, before its behaviors")
    .option("--allowHashUrls", "URLs that differ only in their #fragment are different pages (default: the fragment is dropped)")
    .option("--addRedirectedSeeds", "a seed page that redirects out of its scope adds the redirect target as a seed with the same scope rules (a change of scheme or www. never leaves the scope)")
    // output: warcinfo fields, WARC names, combined WARCs, CDXJ index, skipped-pages report (config/groups/outputOptions.ts)
    // A bare --warcInfo is "" (warned about, as browsertrix-crawler ignores it), not `true` in place of the fields.
    .addOption(new Option("--warcInfo [name=value]", "add a field to the warcinfo record of every WARC file (repeatable; also \"name: value\" lines, --warcinfo.name value, or a mapping in --config)").argParser(collect).preset(""))
    .option("--warcPrefix <prefix>", "WARC file names start with <prefix>-<crawlId>- (default: rec; env WARC_PREFIX wins, as in browsertrix-crawler)")
    .option("--combineWARC", "when the crawl ends, also append all its WARC files into <collection>_0.warc.gz (then _1... past --rolloverSize) in the collection folder")
    .option("--generateCDX", "when the crawl ends, write a sorted CDXJ index of all its WARC files to indexes/index.cdxj")
    // QA: does every page replay as it was captured? (src/qa/; the `qa` command checks any archive)
    .option("--qa", "once the crawl has ended, replay its WACZ in ReplayWeb.page and score each page against what the crawl saw (screenshot, text, requests): <collection>/qa.json, qa/<page>.json and the report qa/index.html; pages below --qaThreshold are listed in the final log (the exit code does not change). Implies --generateWACZ, --screenshot view and --text to-warc, and writes a urn:pageinfo: record per page")
    .option("--qaThreshold <score>", `with --qa: pages whose score (0-1) is below this are listed (default: ${DEFAULT_QA_THRESHOLD})`)
    .option("--qaDebugImageDiff", "with --qa: also write each page's pixel difference image, qa/<page>.diff.png")
    .option("--reportSkipped", "list the pages found but not queued (out of scope, robots.txt, page limit), with the reason, in reports/skippedPages.jsonl (packaged into the WACZ)")
    // state files, Redis lists for the Browsertrix service, log contexts (config/groups/stateOptions.ts)
    .addOption(new Option("--saveState <when>", "write the crawl state as YAML to <collection>/crawls/ (resume with --config <file>): never; partial (when the crawl ends unfinished); always (also every --saveStateInterval)").choices(["never", "partial", "always"]))
    .option("--saveStateInterval <seconds>", "with --saveState always: seconds between state files (default: 300)")
    .option("--saveStateHistory <n>", "state files kept; older ones are deleted (default: 5)")
    .option("--writePagesToRedis", "push each crawled page as JSON to the Redis list <crawlId>:pages (for the Browsertrix service)")
    .option("--logErrorsToRedis", "push each error log line to the Redis list <crawlId>:e")
    .option("--logBehaviorsToRedis", "push each behavior log line (info, warn, error) to the Redis list <crawlId>:b")
    .option("--context <contexts...>", "write only log lines of these contexts, comma-separated, repeatable (default: all)", collect)
    .option("--logExcludeContext <contexts...>", "do not write log lines of these contexts, comma-separated, repeatable (default: recorderNetwork,jsError,screencast)", collect)
    // Page load and browser setup (browsertrix-crawler's names)
    .option("--waitUntil <events>", "what a page's navigation waits for, all of them, within --pageLoadTimeout: load, domcontentloaded, networkidle0, networkidle2; comma-separated, repeatable; the --netIdleWait wait follows (default: load)", collect)
    .option("--netIdleMaxRequests <n>", "requests that may still be in flight for the network to count as idle in the --netIdleWait waits", "0")
    .option("--lang <language>", "the browser's language, a BCP 47 code such as de or pt-BR: navigator.language and the Accept-Language of every request")
    .option("--userAgentSuffix <text>", "appended (after a space) to the browser's user agent, or the --mobileDevice's; not to a --userAgent")
    .option("--mobileDevice <name>", "emulate this device in every tab (viewport, touch, user agent), a name of puppeteer's KnownDevices such as \"Pixel 2\" or \"iPhone X\"")
    .option("--extraChromeArgs <args...>", "more Chromium command-line switches (write --extraChromeArgs=--switch, or several after one flag; repeatable)", collect)
    // Links and behaviors (config/groups/linkBehaviorOptions.ts)
    .option("--selectLinks <selectors...>", "where each page's links are read from, in every frame: selector->property or selector->@attribute (a property that is empty falls back to the attribute), comma-separated, repeatable (default: a[href]->href,area[href]->href)", collect)
    .option("--extractFormLinks", "crawl the URL each GET form of a page (in every frame) submits with its default values, and with each other option of each of its selects (at most 100 a select); not forms with a password field, nor a search box (only empty text and hidden fields) that submits to the page itself (default: on)")
    .option("--no-extractFormLinks", "do not crawl the URLs of pages' GET forms")
    .option("--extractFeedLinks", "crawl the RSS, Atom and JSON feeds a page names in <link rel=alternate>, and the pages a feed lists (default: on)")
    .option("--no-extractFeedLinks", "do not crawl pages' feeds nor the pages feeds list")
    .option("--clickSelector <selector>", "CSS selector of the elements the autoclick behavior (--behaviors autoclick) clicks", "a")
    .option("--customBehaviors <sources...>", "behavior classes to run in pages (with the siteSpecific behavior): a .js file or a .json Chrome Recorder flow, a folder of them, an http(s) URL of one, or git+<repo URL>[?branch=B&path=dir]; comma-separated, repeatable", collect)
    .option("--autoscrollMaxRounds <n>", `the autoscroll behavior scrolls each frame (the window and scrolling elements) to its end and clicks "load more" buttons while it grows, until it stops growing, --behaviorTimeout, or it has grown this many times (default ${DEFAULT_AUTOSCROLL_MAX_ROUNDS})`)
    .option("--alwaysAddBehaviorLinks", "links that behaviors add (custom behaviors' addLink, links autoclick clicks) are crawled whatever the scope, unless --exclude'd")
    // Lifecycle: which failures fail the crawl, restarts, --overwrite, --dryRun, health (src/config/groups/lifecycleOptions.ts)
    .option("--maxPageLimit <n>", "caps --limit: the crawl takes at most this many pages whatever --limit says; 0 = no cap")
    .option("--failOnFailedSeed", "a seed that fails (after its retries) fails the crawl at once: exit code 1")
    .option("--failOnInvalidStatus", "a page answered 4xx or 5xx is a failed page (retried, then counted failed, for --failOnFailedSeed and --failOnFailedLimit too), not a crawled one")
    .option("--failOnContentCheck", "pages and behaviors may fail the crawl by calling window.__bx_contentCheckFailed(reason) (e.g. logged out): exit code 9")
    .option("--restartsOnError", "a supervisor restarts the crawl: an interrupted crawl skips packaging (its rerun resumes and packages), and a crawl that fails exits 0")
    .option("--overwrite", "delete the collection's folder (<cwd>/collections/<name>) before crawling")
    .option("--dryRun", "write no archive data (no WARC, no WACZ): only the pages lists and the logs")
    .option("--rateLimitInterruptCount <n>", "interrupt the crawl (exit code 18) after this many rate-limit answers, each within the back-off of the one before; -1 = never", "-1")
    .option("--screencastPort <port>", "serve a page watching the crawl live on this port (127.0.0.1; SCREENCAST_HOST=address to listen elsewhere, where its URL then holds a secret token, printed once on stderr): each worker's tab, its URL, the progress figures and recent warnings; 0 = none", "0")
    .option("--screencastRedis", "publish this process's workers' frames through the crawl Redis, so that the live view (--screencastPort) of any process of the crawl shows the workers of all of them")
    .option("--healthCheckPort <port>", "serve GET /healthz on this port: 200 while healthy, 503 once as many page attempts in a row as --workers have failed; 0 = none", "0")
    .option("--metricsPort <port>", "serve GET /metrics on this port: the crawler's metrics in the Prometheus text format (pages, bytes, revisits, errors by kind, page times), on every interface (METRICS_HOST=address narrows it); default: env METRICS_PORT, else 0 = none")
    // Dedupe flags (src/config/groups/dedupeFlagOptions.ts)
    .option("--dedupePagesMinDepth <depth>", "a page at this depth or deeper whose HTML the dedupe index holds is written as a revisit and not loaded further (no resources, no links followed), and reported skipped as a duplicate; -1 = never", "-1")
    .option("--dedupeConcurrent", "this crawl's payload hashes join the merged dedupe index as they are written, not at commit: crawls running at the same time dedupe against each other (a crawl cancelled later leaves revisits of others pointing into its WACZ files)")
    // Browser extras: service workers, origin override, storage, rate-limit text, debugging (src/config/groups/tabCaptureOptions.ts, debugOptions.ts)
    .option("--serviceWorker <mode>", "service workers: disabled (requests bypass them), enabled, or disabled-if-profile (disabled with a --profile)", "disabled")
    .option("--originOverride <rules...>", "send requests for origin orig to origin new, archived under orig: orig=new, e.g. https://example.com=http://127.0.0.1:8080; repeatable", collect)
    .option("--saveStorage", "store each page's localStorage and sessionStorage in the WARC-JSON-Metadata of its document's response record")
    .option("--rateLimitOnMatch <rules...>", "a page whose HTML/JSON/JS text matches <regex>, or <regex>:<status> with that status, is rate-limited as by --rateLimitStatusCodes; repeatable (default: src=\"/_Incapsula_Resource?:200)", collect)
    .option("--waitOnDone", "once the crawl is finished, wait for SIGINT or SIGTERM before exiting (with the crawl's exit code)")
    .option("--debugAccessBrowser", "serve the browser's DevTools protocol (CDP) on port 9222, for debugging: on 127.0.0.1, or every interface in a container (/.dockerenv, /run/.containerenv); env DEBUG_ACCESS_HOST=address (0.0.0.0: every interface) chooses. Whoever reaches it controls the browser")
    .option("--debugAccessRedis", "the embedded redis-server listens where --debugAccessBrowser does, for debugging, with a password made up for the run: the redis:// URL to connect with is printed once on stderr (in no file)")
    // Blocking (src/config/groups/blockOptions.ts, src/block/)
    .option("--blockRules <rules...>", "block requests of the pages (resources, frames; never the page itself) that a rule matches: a URL regex, or a rule's JSON {\"url\", \"inFrameUrl\", \"frameTextMatch\", \"type\": \"block\"|\"allowOnly\"} (in --config, a list of mappings); repeatable. Blocked requests are not sent nor archived; they are counted and listed in reports/blocked.jsonl", collect)
    .option("--blockMessage <html>", "shown in a frame whose document a --blockRules rule blocked (not archived)")
    .option("--blockAds", "block requests to the hosts of EasyList and EasyPrivacy (ads and trackers; the lists of Debian's uBlock Origin package), as --blockRules blocks")
    .option("--adBlockMessage <html>", "shown in a frame whose document --blockAds blocked (not archived)")
    .option("--rateLimitStatusCodes <codes>", "a page answered with one of these statuses is rate-limited: not archived, its host backed off (Retry-After), retried; comma-separated, repeatable (default: 429,503)", collect)
    .option("--rateLimitMaxRetries <n>", "rate-limit answers a page may get before it is recorded as failed; -1 = no limit", "4")
    .option("--rateLimitTimeout <seconds>", "how long a host is backed off after a rate-limit answer without Retry-After, and the longest Retry-After honoured", "300")
    .option("--maxResourceSize <bytes>", "keep at most this much of any one response body (e.g. 512MB); the rest is dropped and the record marked WARC-Truncated: length", "512MB")
    // Proxies (src/proxy/): every fetch of the crawl, the browser's and the crawler's own, goes through them
    .option("--proxyServer <url>", "fetch everything through this proxy: http://, https://, socks5:// (user:password@ for credentials) or ssh://user@host[:port] (a SOCKS tunnel opened with ssh -D); default: env PROXY_SERVER, else PROXY_HOST and PROXY_PORT")
    .option("--proxyServerConfig <file>", "YAML file of per-host proxies (browsertrix-crawler's format): matchHosts (URL regex: proxy name; \"\" for every other URL) and proxies (name: URL, or url, privateKeyFile, publicHostsFile, ignoreOnFailedSSHTunnel)")
    .option("--proxyServerPreferSingleProxy", "with both --proxyServer and --proxyServerConfig: every URL goes through --proxyServer")
    .option("--sshProxyPrivateKeyFile <file>", "private key for ssh:// proxies (ssh -i)")
    .option("--sshProxyKnownHostsFile <file>", "known_hosts file the ssh:// proxies' host keys are checked against (default: not checked)")
    .option("--diskUtilization <percent>", "stop the crawl gracefully once the disk holding the collection is used above this percent (checked while writing); 0 = off", "90")
    .allowExcessArguments(false)
    .showHelpAfterError(false));
}

/** Flags from the command line and CRAWL_ARGS, then from the --config file for those not given there. */
export function crawlFlags(program: Command, argv: string[], from: "node" | "user" = "node", env: NodeJS.ProcessEnv = process.env): RawCrawlFlags {
  const args = withCrawlArgs(from === "node" ? argv.slice(2) : argv, env);
  program.parse(foldDottedFlags(args), { from: "user" });
  const configFile = program.opts<RawCrawlFlags>().config;
  // A state file (--saveState) is a config with a `state:` section: the crawl resumes from it.
  const { state: savedState, [WITHHELD_KEY]: withheld, ...config } = configFile ? checkedStateFile(readConfigFile(configFile), configFile) : {};
  if (configFile) applyConfig(program, config, configFile);
  // A state file left out the values holding secrets: they come again from where they came from.
  restoreWithheld(program, withheld);
  setAsideUnimplementedValues(program, env);
  const flags = program.opts<RawCrawlFlags>();
  // The seeds are the archive's own content (their URLs are in every record): not scrubbed from logs.
  const { url: _url, seeds: _seeds, ...others } = flags as Record<string, unknown>;
  registerSecretsIn(others, env);
  // browsertrix-crawler's per-seed `auth` (user:password), not used here but never to be written either.
  const seedAuth = (Array.isArray(_seeds) ? _seeds : []).map((seed: unknown) => (seed !== null && typeof seed === "object" && "auth" in seed ? String(seed.auth) : ""));
  registerSecrets(seedAuth.filter(Boolean));
  // --header values that may hold a credential (a cookie, a token): never in logs or `ps` either.
  registerSecrets(headerFlagSecrets(flags.header ?? []));
  return { ...flags, savedState, configToSave: configToSave(program, config, configFile ?? null, withheld) };
}

async function main(argv: string[]): Promise<number> {
  const program = buildCrawlProgram().exitOverride();
  program.configureOutput({ writeErr: (text) => process.stderr.write(text.split("\n")[0] + "\n") });
  let flags: RawCrawlFlags;
  try {
    flags = crawlFlags(program, argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      return err.exitCode === 0 ? 0 : ExitCode.BadUsage;
    }
    if (err instanceof OptionsError) {
      process.stderr.write(`crawl: ${scrubSecrets(err.message)}\n`);
      return ExitCode.BadUsage;
    }
    throw err;
  }
  hideSecretsFromProcessList(argv);
  for (const warning of compatWarnings(program)) process.stderr.write(`crawl: warning: ${warning}\n`);

  return runCrawlCommand(flags);
}

// Run only as the program itself, so that tests can import the flag definitions.
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`crawl: ${scrubSecrets(errorMessage(err))}\n`);
      process.exit(ExitCode.Failed);
    },
  );
}
