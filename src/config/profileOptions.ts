import { OptionsError } from "./optionsError.js";

/** --profile, --loginUrl as commander hands them over (--profile already a local file: the CLI downloads a URL first). */
export interface RawProfileFlags {
  profile?: string;
  loginUrl?: string;
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
}

export function profileOptions(flags: RawProfileFlags): ProfileOptions {
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
  return { archive: flags.profile?.trim() || null, loginUrl };
}
