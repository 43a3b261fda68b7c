import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Target } from "puppeteer-core";
import { CdpScreencast } from "../screencast/cdpScreencast.js";
import { tokenMatches } from "../screencast/liveViewServer.js";
import { errorMessage, logger } from "../log/logger.js";
import { INTERACTIVE_PAGE } from "./interactivePage.js";
import type { LoginBrowser } from "./loginBrowser.js";
import { dispatchRemoteInput, parseRemoteInput } from "./remoteInput.js";

export interface InteractiveSession {
  /** The page's address, token included: whoever has it controls the browser (and its logins). */
  url: string;
  /** Settles when the profile is saved, saving failed, or --shutdownWait passed without a ping. */
  done: Promise<"saved" | "failed" | "timeout">;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024;
const HEADERS = {
  "cache-control": "no-store",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
};
const PAGE_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; form-action 'none'; frame-ancestors 'none'";

/**
 * The interactive mode of create-login-profile: an HTTP server (127.0.0.1 unless told otherwise) serving
 * one page that shows the remote tab live (CdpScreencast frames as server-sent events) and sends the
 * user's clicks and keys back (CDP Input.*), with "Save profile". Every request must carry the random
 * token printed at the start (403 otherwise); the server serves nothing but its page, stream and
 * input endpoints.
 */
export async function startInteractiveServer(login: LoginBrowser, listen: { host: string; port: number }, shutdownWaitSeconds: number): Promise<InteractiveSession> {
  const token = randomBytes(24).toString("base64url");
  const clients = new Set<ServerResponse>();
  let lastFrame: string | null = null;
  let saving = false;
  let finish!: (how: "saved" | "failed" | "timeout") => void;
  const done = new Promise<"saved" | "failed" | "timeout">((resolve) => (finish = resolve));

  const broadcast = (event: string, data: unknown) => {
    const message = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    if (event === "frame") lastFrame = message;
    for (const client of clients) client.write(message);
  };
  await login.page.bringToFront().catch(() => undefined);
  const { width, height } = login.page.viewport() ?? { width: 1366, height: 900 };
  const screencast = await CdpScreencast.start(login.cdp, (frame) => broadcast("frame", frame), { quality: 70, maxWidth: width, maxHeight: height });
  login.page.on("framenavigated", (frame) => {
    if (frame === login.page.mainFrame()) broadcast("url", { url: frame.url() });
  });
  // A window the site opens is shown in the one tab there is (the page streams only that one).
  const onTarget = async (target: Target) => {
    if (target.type() !== "page" || target === login.page.target()) return;
    const opened = await target.page().catch(() => null);
    const url = target.url();
    await opened?.close().catch(() => undefined);
    if (/^https?:/.test(url)) await login.page.goto(url).catch((err: unknown) => logger.warn("profile", `page load failed: ${errorMessage(err)}`));
  };
  login.browser.on("targetcreated", onTarget);

  let idle: NodeJS.Timeout | null = null;
  const alive = () => {
    if (!shutdownWaitSeconds) return;
    if (idle) clearTimeout(idle);
    idle = setTimeout(() => {
      logger.warn("profile", `no ping from the page for ${shutdownWaitSeconds}s (--shutdownWait): closing without saving`);
      finish("timeout");
    }, shutdownWaitSeconds * 1000);
  };
  alive();

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      logger.warn("profile", `interactive page: ${errorMessage(err)}`);
      if (!res.headersSent) replyJson(res, 500, { error: "internal error" });
      else res.end();
    });
  });
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://interactive.invalid");
    if (!tokenMatches(url.searchParams.get("token"), token)) return void replyJson(res, 403, { error: "forbidden" });
    alive();
    const route = `${req.method} ${url.pathname}`;
    switch (route) {
      case "GET /":
        res.writeHead(200, { ...HEADERS, "content-type": "text/html; charset=utf-8", "content-security-policy": PAGE_POLICY });
        res.end(INTERACTIVE_PAGE);
        return;
      case "GET /stream":
        res.writeHead(200, { ...HEADERS, "content-type": "text/event-stream", connection: "keep-alive" });
        res.write(`event: url\ndata: ${JSON.stringify({ url: login.page.url() })}\n\n`);
        if (lastFrame) res.write(lastFrame);
        clients.add(res);
        req.on("close", () => clients.delete(res));
        return;
      case "GET /ping":
        return void replyJson(res, 200, { pong: true });
      case "POST /input": {
        const input = parseRemoteInput(await readJson(req));
        if (!input) return void replyJson(res, 400, { error: "not an input event" });
        if (!saving) await dispatchRemoteInput(login.cdp, input).catch((err: unknown) => logger.debug("profile", `input not delivered: ${errorMessage(err)}`));
        return void replyJson(res, 200, { ok: true });
      }
      case "POST /navigate": {
        const body = (await readJson(req)) as { url?: unknown } | null;
        const target = typeof body?.url === "string" ? httpUrl(body.url) : null;
        if (!target) return void replyJson(res, 400, { error: "an http(s) URL is needed" });
        logger.info("profile", "loading a page", { url: target });
        login.page.goto(target).catch((err: unknown) => logger.warn("profile", `page load failed: ${errorMessage(err)}`));
        return void replyJson(res, 200, { ok: true });
      }
      case "POST /save": {
        if (saving) return void replyJson(res, 409, { error: "saving already" });
        saving = true;
        await screencast.stop();
        try {
          const file = await login.save();
          replyJson(res, 200, { saved: file });
          finish("saved");
        } catch (err) {
          logger.error("profile", `the profile could not be saved: ${errorMessage(err)}`);
          replyJson(res, 500, { error: errorMessage(err) });
          finish("failed");
        }
        return;
      }
      default:
        return void replyJson(res, 404, { error: "not found" });
    }
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(listen.port, listen.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = listen.host.includes(":") ? `[${listen.host}]` : listen.host;
  return {
    url: `http://${host === "0.0.0.0" || host === "[::]" ? "127.0.0.1" : host}:${port}/?token=${token}`,
    done,
    async close() {
      if (idle) clearTimeout(idle);
      login.browser.off("targetcreated", onTarget);
      await screencast.stop();
      for (const client of clients) client.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function replyJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { ...HEADERS, "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function httpUrl(value: string): string | null {
  try {
    const url = new URL(value.trim());
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : null;
  } catch {
    return null;
  }
}

/** The request's JSON body (at most 64 KiB), or null. */
async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return null;
  }
}
