// What `crawl` does with its parsed flags (src/cli/crawl.ts parses them): start the proxies, fetch what the
// flags point at (seed file, custom behaviors, profile), resolve the options, run the crawl under signal
// handling, then --qa and --waitOnDone; every failure becomes one line on stderr and an exit code.
import { resolveCrawlOptions, OptionsError, type RawCrawlFlags } from "../config/crawlOptions.js";
import { localSeedFile } from "../config/seedFileUrl.js";
import { localCustomBehaviors } from "../config/customBehaviors.js";
import { collectionPaths } from "../config/collectionPaths.js";
import { ExitCode } from "../lifecycle/exitCodes.js";
import { waitForStopSignal } from "../lifecycle/waitOnDone.js";
import { RedisUnreachableError } from "../redis/connect.js";
import { DedupeIndexUnavailableError } from "../dedupe/retry.js";
import { errorMessage, logger } from "../log/logger.js";
import { scrubSecrets } from "../log/secrets.js";
import { TerminalDisplay } from "../log/terminal.js";
import { AddressPolicy, AddressRefusedError } from "../fetch/addressPolicy.js";
import { openCrawlProfile, ProfileSourceError, settleSavedProfile, type CrawlProfile } from "../profile/crawlProfile.js";
import { ProxyConfigError, proxySettings } from "../proxy/proxySettings.js";
import { checkProxyCredentials, ProxyStartError, startProxies, stopProxies } from "../proxy/activeProxies.js";
import { checkCrawl, withQaNeeds } from "../qa/crawlQa.js";
import type { MetricsServer } from "../metrics/metricsServer.js";
import { runCrawl } from "./crawler.js";
import { hardPageDeadlineMs } from "./pages/crawlPage.js";
import { StopControl } from "./stopControl.js";

/** Run `crawl` with flags already parsed and checked by the command line; resolves to the exit code. */
export async function runCrawlCommand(flags: RawCrawlFlags): Promise<number> {
  // What the browser's connections through the proxy relay, and the --qa replay's, may reach: the policy
  // outside a crawl until the crawl has resolved its seeds, the crawl's from then on.
  const addresses = { policy: AddressPolicy.outsideACrawl() };
  // Proxies first: the seed file and behaviors fetched below go through them too.
  try {
    await startProxies(proxySettings(flags), { verdict: (url) => addresses.policy.check(url), lookup: (hostname, options, callback) => addresses.policy.lookup(hostname, options, callback) });
  } catch (err) {
    if (!(err instanceof ProxyConfigError || err instanceof ProxyStartError)) throw err;
    process.stderr.write(`crawl: ${scrubSecrets(err.message)}\n`);
    return err instanceof ProxyConfigError ? ExitCode.BadUsage : ExitCode.ProxyError;
  }
  try {
    return await crawlWithFlags(flags, addresses);
  } finally {
    await stopProxies();
  }
}

async function crawlWithFlags(flags: RawCrawlFlags, addresses: { policy: AddressPolicy }): Promise<number> {
  let finalLine: string | null = null;
  let options;
  let profile: CrawlProfile | null = null;
  try {
    const seedFile = flags.seedFile ? await localSeedFile(flags.seedFile, flags.userAgent ?? null) : null;
    // Behaviors from URLs and git repositories: fetched once, read with the options, then removed.
    const behaviors = await localCustomBehaviors(flags.customBehaviors ?? [], flags.userAgent ?? null).catch((err: unknown) => {
      seedFile?.dispose();
      throw err;
    });
    try {
      options = resolveCrawlOptions(withQaNeeds({ ...flags, ...(seedFile ? { seedFile: seedFile.path } : {}), customBehaviors: behaviors.paths, customBehaviorOrigins: behaviors.origins }));
    } finally {
      seedFile?.dispose();
      behaviors.dispose();
    }
    // --profile: a URL is downloaded once (after the other flags are checked); every browser of the crawl
    // unpacks its own copy (pagePhase.ts). --loginUrl wins over the login page the profile notes.
    if (flags.profile) {
      profile = await openCrawlProfile(flags.profile, flags.userAgent ?? null).catch((err: unknown) => {
        throw err instanceof ProfileSourceError ? new OptionsError(err.message) : err;
      });
      options = { ...options, profile: { ...options.profile, archive: profile.path, loginUrl: options.profile.loginUrl ?? profile.loginUrl } };
    }
  } catch (err) {
    profile?.dispose();
    if (err instanceof OptionsError) {
      process.stderr.write(`crawl: ${scrubSecrets(err.message)}\n`);
      return ExitCode.BadUsage;
    }
    throw err;
  }
  try {
    await checkProxyCredentials(options.seeds);
  } catch (err) {
    profile?.dispose();
    if (!(err instanceof ProxyStartError)) throw err;
    process.stderr.write(`crawl: ${scrubSecrets(err.message)}\n`);
    return ExitCode.ProxyError;
  }
  logger.setLevel(options.logLevel);
  logger.setContexts(options.state.logContexts, options.state.logExcludeContexts);
  // A person at a terminal gets a progress bar and readable warnings; the JSON log is in logs/ all the same.
  if (process.stderr.isTTY && !options.logging.includes("stderr-json")) logger.showIn(new TerminalDisplay(process.stderr));

  const graceMs = options.pageLoadTimeout * 1000;
  const stop = new StopControl(graceMs, {
    // In-flight pages get their grace, shutting the browser and WARC down has its own deadlines: past
    // all that, something is stuck, and a crawl that never ends is worse than one that resumes.
    // (a time or size limit lets in-flight pages run to their own deadline, behaviors included).
    ms: Math.max(graceMs, hardPageDeadlineMs(options)) + 120_000,
    onStuck: () => {
      process.stderr.write("crawl: the crawl did not stop in time after being asked to: exiting; run the same command again to resume\n");
      setTimeout(() => process.exit(ExitCode.InterruptedForce), 2000).unref();
      void logger.close().finally(() => process.exit(ExitCode.InterruptedForce));
    },
  });
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info("crawl", `received ${signal}`);
    stop.request("signal");
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  // The terminal of a running crawl was closed: stop as for SIGTERM (what was captured is written).
  // Writes to the terminal that is gone fail from now on; the log file in logs/ keeps everything.
  process.on("SIGHUP", (signal) => {
    for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);
    onSignal(signal);
  });
  let metricsServer: MetricsServer | null = null;
  try {
    // --metricsPort: served from before the crawl (a port in use fails it before anything is written) until the
    // process exits, --qa and --waitOnDone included, so that the last scrape sees the final counts.
    // prom-client is loaded only then (tens of ms of every crawler's start otherwise).
    metricsServer = options.lifecycle.metricsPort ? await (await import("../metrics/metricsServer.js")).MetricsServer.start(options.lifecycle.metricsPort) : null;
    const outcome = await runCrawl(options, stop, metricsServer?.metrics ?? null, (policy) => (addresses.policy = policy));
    if (options.profile.saveProfile) settleSavedProfile(options.profile.saveProfile, outcome.exitCode === ExitCode.Finished && !outcome.failure);
    if (outcome.failure) process.stderr.write(`crawl: ${scrubSecrets(outcome.failure)}\n`);
    // --qa: after the crawl, on its own WACZ files; the exit code stays the crawl's.
    const qa = options.output.qa;
    if (qa && stop.reason !== "signal") await checkCrawl(outcome.waczPaths, { qa, collectionDir: collectionPaths(options.cwd, options.collection).root, executablePath: options.browserPath, pageLoadTimeoutSeconds: options.pageLoadTimeout, addresses: addresses.policy, places: { cwd: options.cwd, from: [], store: options.store } });
    // A crawl stopped by a signal is not "done": it exits as asked.
    if (options.debugging.waitOnDone && stop.reason !== "signal") await waitForStopSignal();
    return outcome.exitCode;
  } catch (err) {
    // After a fatal error (the embedded Redis died...), what failed next is a consequence: say the cause.
    const message = stop.fatalError ?? errorMessage(err);
    logger.error("crawl", errorMessage(err));
    // The last line, once everything below has closed: work still in flight when the crawl failed (a page's
    // fallback fetch) may log what failed with it meanwhile, and the cause must stay what the user reads last.
    finalLine = `crawl: ${scrubSecrets(message)}\n`;
    if (stop.outOfSpace) return ExitCode.OutOfSpace;
    // A seed on an address the crawler may not fetch is known before anything is fetched: bad input.
    if (err instanceof AddressRefusedError) return ExitCode.BadUsage;
    return err instanceof RedisUnreachableError || err instanceof DedupeIndexUnavailableError ? ExitCode.RedisUnavailable : ExitCode.Failed;
  } finally {
    await metricsServer?.close();
    profile?.dispose();
    stop.dispose();
    await logger.close();
    if (finalLine) process.stderr.write(finalLine);
  }
}

