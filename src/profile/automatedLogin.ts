import { errorMessage, logger } from "../log/logger.js";
import { isLoginPage } from "../capture/pageAnswers.js";
import type { LoginBrowser } from "./loginBrowser.js";
import type { LoginProfileOptions } from "./loginProfileOptions.js";

/** The fields browsertrix-crawler's automated login looks for (and the standard autocomplete hints). */
export const USER_FIELD = "input[name='user'],input[name='username'],input[name='email'],input#user,input#username,input#email,input[autocomplete='username']";
export const PASSWORD_FIELD = "input[type='password'],input[name='pass'],input[name='password'],input#pass,input#password";

const FIELD_TIMEOUT_MS = 30_000;
const PAGE_TIMEOUT_MS = 90_000;

export class LoginFormNotFoundError extends Error {}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * --automated: load the login page, type the user name and password into the fields found there, press
 * Enter in the password field and wait for the page that follows (browsertrix-crawler's steps).
 * Throws LoginFormNotFoundError when the page has no such fields.
 */
export async function automatedLogin(login: LoginBrowser, options: LoginProfileOptions, user: string, password: string): Promise<void> {
  const { page } = login;
  logger.info("profile", "loading the login page", { url: options.url });
  await page.goto(options.url, { waitUntil: "load", timeout: PAGE_TIMEOUT_MS }).catch((err: unknown) => logger.warn("profile", `the login page did not finish loading: ${errorMessage(err)}`));
  if (options.postLoadDelaySeconds) await sleep(options.postLoadDelaySeconds * 1000);
  const userField = await page.waitForSelector(USER_FIELD, { timeout: FIELD_TIMEOUT_MS }).catch(() => null);
  const passwordField = userField ? await page.waitForSelector(PASSWORD_FIELD, { timeout: FIELD_TIMEOUT_MS }).catch(() => null) : null;
  if (!userField || !passwordField) {
    await debugScreenshot(login, options);
    throw new LoginFormNotFoundError(`login form could not be found on ${page.url()}: no ${userField ? "password" : "user name"} field (${userField ? PASSWORD_FIELD : USER_FIELD})`);
  }
  await userField.type(user);
  await passwordField.type(password);
  await Promise.allSettled([page.waitForNavigation({ waitUntil: "load", timeout: PAGE_TIMEOUT_MS }), passwordField.press("Enter")]);
  if (options.postLoadDelaySeconds) await sleep(options.postLoadDelaySeconds * 1000);
  // Still on the login page: the site did not take the credentials (or logs in without leaving the page).
  if (isLoginPage(page.url(), options.url)) logger.warn("profile", "still on the login page after the login: check the user name and password (--debugScreenshot shows the page)", { url: page.url() });
  else logger.info("profile", "logged in", { url: page.url() });
  await debugScreenshot(login, options);
}

async function debugScreenshot(login: LoginBrowser, options: LoginProfileOptions): Promise<void> {
  if (!options.debugScreenshot) return;
  const path = options.debugScreenshot as `${string}.png`;
  await login.page.screenshot({ path }).then(
    () => logger.info("profile", "debug screenshot saved", { path }),
    (err: unknown) => logger.warn("profile", `cannot save the debug screenshot: ${errorMessage(err)}`),
  );
}
