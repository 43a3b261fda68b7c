import type { CDPSession, Protocol } from "puppeteer-core";
import { logger } from "../log/logger.js";
import { browserProxyCredentials, browserProxyNeedsCredentials } from "../proxy/activeProxies.js";

/**
 * Proxy credentials for Chromium, which takes none on its command line: with a proxy that asks for them
 * (an http(s) proxy with user:password@, or the local relay), the tab's Fetch domain (capture.ts) also
 * pauses on authentication challenges and this answers the proxy's with its credentials, once per
 * request (a second challenge means they were refused: the request fails). A site's own challenge (401)
 * is left to Chromium as without a proxy. Returns whether Fetch.enable must ask for challenges.
 */
export function answerProxyChallenges(cdp: CDPSession): boolean {
  if (!browserProxyNeedsCredentials()) return false;
  const answered = new Set<string>();
  cdp.on("Fetch.authRequired", (event: Protocol.Fetch.AuthRequiredEvent) => {
    const { requestId, authChallenge } = event;
    let reply: Protocol.Fetch.AuthChallengeResponse = { response: "Default" };
    if (authChallenge.source === "Proxy") {
      const credentials = browserProxyCredentials(authChallenge.origin);
      if (credentials && !answered.has(requestId)) {
        if (answered.size > 10_000) answered.clear();
        answered.add(requestId);
        reply = { response: "ProvideCredentials", ...credentials };
      } else {
        logger.warn("proxy", credentials ? "the proxy refused the credentials" : "a proxy asked for credentials we do not have", { url: event.request.url, proxy: authChallenge.origin });
        reply = { response: "CancelAuth" };
      }
    }
    void cdp.send("Fetch.continueWithAuth", { requestId, authChallengeResponse: reply }).catch(() => undefined);
  });
  return true;
}
