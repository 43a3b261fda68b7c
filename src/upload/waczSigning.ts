import { request } from "undici";
import { errorMessage, logger } from "../log/logger.js";

/** WACZ_SIGN_URL and WACZ_SIGN_TOKEN: a signing server (webrecorder's authsign) that signs each WACZ. */
export interface WaczSigning {
  url: string;
  /** Sent as `Authorization: bearer <token>`, as browsertrix-crawler sends it; null = no header. */
  token: string | null;
}

/** What a signer is asked to sign: the digest of the exact datapackage.json bytes, and its `created`. */
export interface SigningRequest {
  hash: string;
  created: string;
}

/** Returns the signing server's answer (stored as datapackage-digest.json's `signedData`), or null when there is none. */
export type WaczSigner = (req: SigningRequest) => Promise<unknown>;

const SIGNING_DEADLINE_MS = 30_000;

export function waczSigningFromEnv(env: NodeJS.ProcessEnv): WaczSigning | null {
  const url = env.WACZ_SIGN_URL?.trim();
  if (!url) return null;
  if (!/^https?:\/\//i.test(url)) throw new Error(`WACZ_SIGN_URL must be an http(s) URL, got ${JSON.stringify(url)}`);
  return { url, token: env.WACZ_SIGN_TOKEN?.trim() || null };
}

/**
 * A signer POSTing `{hash, created}` as JSON to the signing server, as browsertrix-crawler (js-wacz) does.
 * A signature is an extra: when the server fails or answers other than 2xx JSON, the WACZ is written
 * unsigned with a warning (browsertrix-crawler's rule), never lost.
 */
export function waczSigner(signing: WaczSigning): WaczSigner {
  return async (req) => {
    try {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (signing.token) headers.authorization = `bearer ${signing.token}`;
      const response = await request(signing.url, {
        method: "POST",
        headers,
        body: JSON.stringify({ hash: req.hash, created: req.created }),
        headersTimeout: SIGNING_DEADLINE_MS,
        bodyTimeout: SIGNING_DEADLINE_MS,
        signal: AbortSignal.timeout(SIGNING_DEADLINE_MS),
      });
      if (response.statusCode < 200 || response.statusCode > 299) {
        await response.body.dump();
        throw new Error(`the signing server answered ${response.statusCode}`);
      }
      return await response.body.json();
    } catch (err) {
      logger.warn("wacz", `cannot sign the WACZ, written without a signature: ${errorMessage(err)}`, { signUrl: signing.url });
      return null;
    }
  };
}
