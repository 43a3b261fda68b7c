#!/usr/bin/env node
import { realpathSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Command, CommanderError, Option } from "commander";
import { ExitCode } from "../lifecycle/exitCodes.js";
import { errorMessage, logger } from "../log/logger.js";
import { hideSecretsFromProcessList, registerSecrets, registerSecretsIn } from "../log/secrets.js";
import { runLoginProfileCommand } from "../profile/loginCommand.js";
import { DEFAULT_INTERACTIVE_PORT, LoginProfileOptionsError, resolveLoginProfileOptions, type LoginProfileOptions, type RawLoginProfileFlags } from "../profile/loginProfileOptions.js";
import { VERSION } from "../version.js";

/** browsertrix-crawler's create-login-profile flags we accept without implementing them: warned about. */
const NOT_IMPLEMENTED = ["proxyServerConfig", "sshProxyPrivateKeyFile", "sshProxyKnownHostsFile"];

export function buildLoginProfileProgram(): Command {
  const program = new Command("create-login-profile")
    .description("Log in to a site in Chromium and save the browser profile (cookies, local storage) as a tar.gz for crawl --profile.")
    .version(VERSION)
    .option("--url <url>", "the login page (required)")
    .option("--user <name>", "user name for the automated login (implies --automated; asked for if --automated is given without it)")
    .option("--password <password>", "password for the automated login (implies --automated; asked for, unechoed, if not given: safer than the command line)")
    .option("--automated", "log in by filling the page's user name and password fields and pressing Enter, with no interactive page")
    .option("--interactive", "log in through the interactive page (the default; browsertrix-crawler's deprecated flag)")
    .option("--filename <path>", "where the profile tar.gz is written; a relative path is taken under ./crawls/profiles/ (as browsertrix-crawler takes it under /crawls/profiles/)", "profile.tar.gz")
    .addOption(new Option("--debugScreenshot [path]", "save a screenshot of the page after the login (automated) to this PNG file").preset(true))
    .option("--headless", "accepted for browsertrix-crawler compatibility: the browser is headless unless --headful is given")
    .option("--headful", "show the browser window (needs a display)")
    .option("--shutdownWait <seconds>", "interactive: exit without saving after this many seconds without a ping from the page; 0 = never", "0")
    .option("--postLoadDelay <seconds>", "automated: wait this long after the login page and after the login have loaded", "0")
    .option("--profile <path|url>", "start from this profile (tar.gz path or http(s) URL) and save it extended with the new login")
    .option("--windowSize <width,height>", "the browser's window and viewport size", "1366,900")
    .option("--cookieDays <days>", "before saving, make every cookie (session cookies too) expire this many days later; 0 = keep them as they are (session cookies are then lost)", "7")
    .option("--proxyServer <url>", "send the browser's traffic through this proxy: http://, https:// or socks5:// (user:password@ for credentials, kept in this process: Chromium goes through a loopback relay); default: env PROXY_SERVER; loopback is never proxied")
    .option("--port <[address:]port>", `interactive: the page listens on this port of 127.0.0.1, or of the address given (e.g. 0.0.0.0:9223 in a container)`, String(DEFAULT_INTERACTIVE_PORT))
    .option("--browserPath <path>", "Chromium executable (default: env BROWSER_BIN, else /usr/bin/chromium)")
    .allowExcessArguments(false)
    .showHelpAfterError(false);
  for (const name of NOT_IMPLEMENTED) program.addOption(new Option(`--${name} <value>`).hideHelp());
  return program;
}

/** Parse a command line (without node and the script) into options; warnings for flags accepted but not implemented. */
export function parseLoginProfileArgs(args: string[], env: NodeJS.ProcessEnv = process.env): { options: LoginProfileOptions; warnings: string[] } {
  const program = buildLoginProfileProgram().exitOverride();
  program.configureOutput({ writeErr: (text) => process.stderr.write(text.split("\n")[0] + "\n"), writeOut: (text) => process.stdout.write(text) });
  program.parse(args, { from: "user" });
  const flags = program.opts<RawLoginProfileFlags & Record<string, unknown>>();
  const warnings = NOT_IMPLEMENTED.filter((name) => flags[name] !== undefined).map((name) => `accepted for browsertrix-crawler compatibility but not implemented yet: --${name}`);
  return { options: resolveLoginProfileOptions(flags, env), warnings };
}

/** Ask on the terminal (the password without echo). */
function prompt(question: string, hidden: boolean): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: process.stdin.isTTY });
  if (hidden) {
    const write = (rl as unknown as { _writeToOutput?: (s: string) => void });
    write._writeToOutput = (s: string) => void (s.includes(question) || s === "\r\n" || s === "\n" ? process.stderr.write(s) : undefined);
  }
  return new Promise((resolve) => rl.question(question, (answer) => {
    rl.close();
    if (hidden) process.stderr.write("\n");
    resolve(answer);
  }));
}

async function main(argv: string[]): Promise<number> {
  let options: LoginProfileOptions;
  try {
    const parsed = parseLoginProfileArgs(argv.slice(2));
    options = parsed.options;
    for (const warning of parsed.warnings) process.stderr.write(`create-login-profile: warning: ${warning}\n`);
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : ExitCode.BadUsage;
    if (err instanceof LoginProfileOptionsError) {
      process.stderr.write(`create-login-profile: ${err.message}\n`);
      return ExitCode.BadUsage;
    }
    throw err;
  }
  // The proxy's and the login's passwords: never in a log line, nor in `ps` (this process's title).
  registerSecretsIn({ proxyServer: options.proxyServer }, process.env);
  if (options.password) registerSecrets([options.password]);
  hideSecretsFromProcessList(argv);
  if (!options.automated) return runLoginProfileCommand(options, null);
  if ((options.user === null || options.password === null) && !process.stdin.isTTY) {
    process.stderr.write("create-login-profile: --automated needs --user and --password (or a terminal to ask for them)\n");
    return ExitCode.BadUsage;
  }
  const user = options.user ?? (await prompt("user name: ", false));
  const password = options.password ?? (await prompt("password: ", true));
  return runLoginProfileCommand(options, { user, password });
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv).then(
    async (code) => {
      await logger.close();
      process.exit(code);
    },
    async (err: unknown) => {
      process.stderr.write(`create-login-profile: ${errorMessage(err)}\n`);
      await logger.close();
      process.exit(ExitCode.Failed);
    },
  );
}
