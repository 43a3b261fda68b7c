import { isAbsolute, resolve } from "node:path";
import { OptionsError } from "../optionsError.js";

/** --profile, --loginUrl as commander hands them over (--profile already a local file: the CLI downloads a URL first). */
export interface RawProfileFlags {
  profile?: string;
  loginUrl?: string;
  saveProfile?: string | boolean;
}

/** Logins: the browser profile every browser of the crawl starts from, and the login page it was made on. */
export interface ProfileOptions {
  /** Local path of the profile tar.gz (create-login-profile's or browsertrix-crawler's); null: a fresh, empty profile. */
  archive: string | null;
  /**
   * The login page: a page whose document redirects there lost its session and is not archived
   * (--loginUrl, else the one create-login-profile noted in the profile); null: no such check.
   */
  loginUrl: string | null;
  /** --saveProfile: where the browser's profile is written when the crawl has finished (exit 0); null: not saved. */
  saveProfile: string | null;
}

export function profileOptions(flags: RawProfileFlags, cwd = resolve("crawls")): ProfileOptions {
  const loginUrl = flags.loginUrl?.trim() || null;
  if (loginUrl !== null) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(loginUrl);
    } catch {
      // reported below
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) throw new OptionsError(`--loginUrl must be an http(s) URL, got ${JSON.stringify(flags.loginUrl)}`);
  }
  return { archive: flags.profile?.trim() || null, loginUrl, saveProfile: saveProfileFile(flags, cwd) };
}

/**
 * browsertrix-crawler's --saveProfile: a path, or no value for the --profile's own file. As there, a
 * relative path is taken under <cwd>/profiles/ (/crawls/profiles/ in its image), and with no value and a
 * --profile URL, which cannot be written to, the profile goes to <cwd>/profiles/profile.tar.gz.
 */
function saveProfileFile(flags: RawProfileFlags, cwd: string): string | null {
  const value = flags.saveProfile;
  if (value === undefined || value === false || value === "") return null;
  const profile = flags.profile?.trim();
  // No value: back into the --profile file it was loaded from (a URL cannot be written to).
  if (value === true && profile && !/^[a-z][a-z0-9+.-]*:\/\//i.test(profile)) return resolve(profile);
  const name = value === true ? "profile.tar.gz" : value.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(name)) throw new OptionsError(`--saveProfile must be a local path, got ${JSON.stringify(name)}`);
  if (name.startsWith("@")) throw new OptionsError(`--saveProfile ${name}: profiles in the upload storage (@name) are not supported; give a path`);
  return isAbsolute(name) ? name : resolve(cwd, "profiles", name);
}
