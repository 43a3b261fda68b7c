// What `create-login-profile` does once its flags are parsed and the credentials known (src/cli/createLoginProfile.ts
// parses and asks on the terminal): start the login browser, log in automatically or serve the interactive page,
// save the profile or discard it; resolves to the exit code.
import { ExitCode } from "../lifecycle/exitCodes.js";
import { errorMessage, logger } from "../log/logger.js";
import { automatedLogin } from "./automatedLogin.js";
import { startInteractiveServer } from "./interactiveServer.js";
import { LoginBrowser } from "./loginBrowser.js";
import type { LoginProfileOptions } from "./loginProfileOptions.js";
import { ProfileSourceError } from "./profileSource.js";

/** The user name and password an --automated login types in. */
export interface LoginCredentials {
  user: string;
  password: string;
}

/** `credentials`: for --automated (the login form is filled in and submitted); null: the interactive page. */
export async function runLoginProfileCommand(options: LoginProfileOptions, credentials: LoginCredentials | null): Promise<number> {
  let login: LoginBrowser;
  try {
    login = await LoginBrowser.start(options);
  } catch (err) {
    process.stderr.write(`create-login-profile: ${errorMessage(err)}\n`);
    return err instanceof ProfileSourceError ? ExitCode.BadUsage : ExitCode.Failed;
  }
  const stop = (signal: NodeJS.Signals) => {
    logger.info("profile", `received ${signal}: closing without saving`);
    void login.discard().finally(() => process.exit(ExitCode.Interrupted));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);

  if (credentials) {
    try {
      await automatedLogin(login, options, credentials.user, credentials.password);
      const file = await login.save();
      process.stdout.write(`profile saved: ${file}\n`);
      return 0;
    } catch (err) {
      await login.discard().catch(() => undefined);
      process.stderr.write(`create-login-profile: ${errorMessage(err)}\n`);
      // browsertrix-crawler's code for a login form not found, and for any other failure.
      return ExitCode.Failed;
    }
  }

  const session = await startInteractiveServer(login, options.listen, options.shutdownWaitSeconds).catch(async (err: unknown) => {
    await login.discard().catch(() => undefined);
    throw err;
  });
  process.stdout.write(`Open ${session.url} to log in, then click "Save profile" (the link holds a secret token: whoever has it controls the browser).\n`);
  logger.info("profile", "loading the login page", { url: options.url });
  login.page.goto(options.url, { waitUntil: "load", timeout: 0 }).catch((err: unknown) => logger.warn("profile", `the login page did not finish loading: ${errorMessage(err)}`));
  const how = await session.done;
  await session.close();
  if (how === "saved") {
    process.stdout.write(`profile saved: ${options.filename}\n`);
    return 0;
  }
  await login.discard().catch(() => undefined);
  // browsertrix-crawler exits 0 when --shutdownWait runs out too.
  return how === "timeout" ? 0 : ExitCode.Failed;
}
