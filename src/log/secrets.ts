/**
 * Secrets in configuration values: what counts as one, and the process-wide list of those the crawl was
 * given (from --config, the command line, the environment), which the logger scrubs out of every line it
 * writes (process-wide as the logger is: README.md says why). A secret is a URL's password (`redis://:pw@`, `http://user:pw@`), a token standing alone before
 * the `@` (`https://TOKEN@host`), or the value of a query parameter named like a credential (`?token=`,
 * `?key=`, `?sig=`, S3's `X-Amz-Signature`...), and the whole value of the variables SECRET_ENV names.
 */

/** Environment variables whose whole value is a secret. */
export const SECRET_ENV = ["STORE_SECRET_KEY", "STORE_ACCESS_KEY", "WACZ_SIGN_TOKEN"];
/** Environment variables that may hold URLs with credentials (or, CRAWL_ARGS, a command line of them). */
export const URL_ENV = ["PROXY_SERVER", "REDIS_DEDUPE_URL", "WEBHOOK_URL", "STORE_ENDPOINT_URL", "WACZ_SIGN_URL", "CRAWL_ARGS"];

/** Query parameter names that carry credentials: whole words of the name, `-`, `_` or `.` separated. */
const SECRET_PARAM = /(?:^|[-_.])(?:token|key|apikey|password|passwd|pwd|pass|secret|sig|signature|credential|credentials|auth|session|sessionid)(?:$|[-_.])/i;
/** Schemes whose name before `@` is a user name, not a token. */
const USER_NAME_SCHEMES = new Set(["ssh:", "git+ssh:", "sftp:", "scp:"]);
/** Shorter secrets are not scrubbed word for word (they would cut up ordinary text); their URL forms still are. */
const MIN_SCRUBBED_LENGTH = 4;

/** The secret parts of a string: for every URL in it, its password, lone token before `@` and credential query values. */
export function secretsOf(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi)) {
    let url: URL;
    try {
      url = new URL(match[0]);
    } catch {
      // Not parsable (a template, a bad port): take what stands between `//` and `@` by hand.
      const userInfo = /^[^:]+:\/\/([^/@\s]*)@/.exec(match[0])?.[1];
      if (userInfo) found.push(decode(userInfo.includes(":") ? userInfo.slice(userInfo.indexOf(":") + 1) : userInfo));
      continue;
    }
    if (url.password) found.push(decode(url.password));
    else if (url.username && !USER_NAME_SCHEMES.has(url.protocol)) found.push(decode(url.username));
    for (const [name, value] of url.searchParams) if (value && SECRET_PARAM.test(name)) found.push(value);
  }
  return found.filter(Boolean);
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Whether a value (a string, or lists and mappings of them) holds a secret. */
export function holdsSecret(value: unknown): boolean {
  return stringsOf(value).some((text) => secretsOf(text).length > 0);
}

/** Every string in a value, through lists and mappings. */
export function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(stringsOf);
  return [];
}

const known = new Set<string>();
let scrubPattern: RegExp | null = null;

/** Remember these secrets: from now on the logger writes `***` wherever one appears. */
export function registerSecrets(secrets: Iterable<string>): void {
  for (const secret of secrets) {
    if (secret.length < MIN_SCRUBBED_LENGTH || known.has(secret)) continue;
    known.add(secret);
    scrubPattern = null;
  }
}

/** Register the secrets in a value (strings, lists, mappings) and in the secret environment variables. */
export function registerSecretsIn(value: unknown, env: NodeJS.ProcessEnv = {}): void {
  registerSecrets(stringsOf(value).flatMap(secretsOf));
  registerSecrets(SECRET_ENV.map((name) => env[name] ?? "").filter(Boolean));
  registerSecrets(URL_ENV.flatMap((name) => secretsOf(env[name] ?? "")));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * `text` with every registered secret (as is, URL-encoded, JSON-escaped) and every URL password replaced
 * by `***`.
 */
export function scrubSecrets(text: string): string {
  let scrubbed = text.replace(/(\/\/[^/@\s":]*:)[^/@\s"]+@/g, "$1***@");
  if (known.size === 0) return scrubbed;
  if (!scrubPattern) {
    const forms = new Set<string>();
    for (const secret of known) {
      forms.add(secret);
      forms.add(encodeURIComponent(secret));
      forms.add(JSON.stringify(secret).slice(1, -1));
    }
    // Longest first: a secret that contains another is replaced whole.
    scrubPattern = new RegExp([...forms].sort((a, b) => b.length - a.length).map(escapeRegExp).join("|"), "g");
  }
  scrubbed = scrubbed.replace(scrubPattern, "***");
  return scrubbed;
}

/** Forget every registered secret (tests). */
export function forgetSecrets(): void {
  known.clear();
  scrubPattern = null;
}

/**
 * `ps` and /proc/<pid>/cmdline show a process's arguments to every local user: when a secret was given on
 * the command line, they show the arguments with it scrubbed instead (Node rewrites argv's memory for
 * process.title). Call once the secrets are registered.
 */
export function hideSecretsFromProcessList(argv: string[] = process.argv): void {
  const shown = argv.map(scrubSecrets);
  if (shown.some((arg, i) => arg !== argv[i])) process.title = shown.join(" ");
}
