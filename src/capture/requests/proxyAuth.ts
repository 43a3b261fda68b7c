import type { CDPSession, Protocol } from "puppeteer-core";
import { logger } from "../../log/logger.js";
import { browserProxyCredentials, browserProxyNeedsCredentials, relayedDirectly, relayInUse } from "../../proxy/activeProxies.js";
import { directFailureReason, isRelayFailureStatus, relayFailureError } from "../../proxy/proxyFailure.js";
import type { PageAttempt } from "../pageAttempt.js";

/**
 * Proxy credentials for Chromium, which takes none on its command line: with a proxy that asks for them
 * (an http(s) proxy with user:password@, or the local relay), the tab's Fetch domain (pageCapture.ts) also
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

/**
 * A tab that is not captured (create-login-profile's): answer its proxy's challenges all the same. Chromium
 * raises them only for requests its Fetch domain pauses, so each request pauses and goes on unchanged.
 */
export async function answerProxyChallengesOf(cdp: CDPSession): Promise<void> {
  if (!answerProxyChallenges(cdp)) return;
  cdp.on("Fetch.requestPaused", (event: Protocol.Fetch.RequestPausedEvent) => {
    void cdp.send("Fetch.continueRequest", { requestId: event.requestId }).catch(() => undefined);
  });
  await cdp.send("Fetch.enable", { handleAuthRequests: true, patterns: [{ urlPattern: "*", requestStage: "Request" }] });
}

/**
 * A paused response that is the relay's answer to a request it could not forward (proxyFailure.ts): fail
 * it in the tab as a network error, so nothing of it is archived. With `pageAttempt` (a main-frame
 * document), a page document failing so fails the attempt (through a proxy, as the proxy's failure; going
 * direct, as Chromium would have failed it: refused, not resolved, connection refused...). Returns whether it was one.
 */
export async function failRelayAnswer(cdp: CDPSession, event: Protocol.Fetch.RequestPausedEvent, pageAttempt: PageAttempt | null): Promise<boolean> {
  const status = event.responseStatusCode ?? 0;
  if (!relayInUse() || !isRelayFailureStatus(status)) return false;
  if (relayedDirectly(event.request.url)) {
    const errorReason = directFailureReason(status);
    logger.debug("capture", "not fetched: the relay could not connect to it", { url: event.request.url, status, errorReason });
    await cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason }).catch(() => undefined);
    return true;
  }
  const error = relayFailureError(status, event.responseStatusText ?? "");
  logger.debug("proxy", "not fetched through the proxy", { url: event.request.url, error });
  if (pageAttempt?.notePageDocument(event.request.url, status, null)) pageAttempt.proxyFailure ??= error;
  await cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "ConnectionFailed" }).catch(() => undefined);
  return true;
}
