/**
 * A members-only site on loopback for the login-profile tests:
 *   GET  /login            the login form (fields at fixed places, for clicks on the interactive page's picture)
 *   POST /login            user=alice&password=secret -> Set-Cookie: session=...; HttpOnly (a session cookie), 302 /members/
 *   GET  /members/         index, links to /members/a, /members/b, /members/c; every page shows its images
 *   GET  /members/img/*.png members-only images
 * Without a valid session, members pages redirect to /login?next=... and images answer 403.
 * expireSessions() forgets every session (the expired-session case). Page /members/a also shows an image
 * of another host, `cdn.test` (CRAWLER_TEST_HOSTS maps it to 127.0.0.1), to check cookies stay on their host.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback, type LoopbackListener } from "../../fixtures/loopback.js";
import { crc32, deflateSync } from "node:zlib";

export const USER = "alice";
export const PASSWORD = "s3cret pass";
export const CDN_HOST = "cdn.test";
/** Where the form's fields are, in CSS pixels of the page (top-left corner, width, height). */
export const FIELD_BOXES = {
  username: { x: 40, y: 80, width: 260, height: 32 },
  password: { x: 40, y: 140, width: 260, height: 32 },
  submit: { x: 40, y: 200, width: 120, height: 36 },
};

export const MEMBER_PAGES = ["/members/", "/members/a", "/members/b", "/members/c"];
export const MEMBER_IMAGES: Record<string, string[]> = {
  "/members/": ["/members/img/index.png"],
  "/members/a": ["/members/img/a1.png", "/members/img/a2.png"],
  "/members/b": ["/members/img/b1.png", "/members/img/b2.png"],
  "/members/c": ["/members/img/c1.png"],
};

export interface SeenRequest {
  host: string;
  method: string;
  path: string;
  cookie: string | null;
}

export interface LoginSite {
  url: string;
  cdnUrl: string;
  loginUrl: string;
  requests: SeenRequest[];
  /** Successful logins so far. */
  logins: number;
  /** The value of the session cookie handed out last (the tests look for it in the WARC). */
  lastSession: string | null;
  expireSessions(): void;
  close(): Promise<void>;
}

/** A small PNG of one colour (a distinct one per name, so that every image is its own payload). */
export function png(seed: string, size = 24): Buffer {
  const hash = crc32(seed);
  const [r, g, b] = [hash & 255, (hash >> 8) & 255, (hash >> 16) & 255];
  const row = Buffer.alloc(1 + size * 3);
  for (let x = 0; x < size; x++) row.set([r, g, b], 1 + x * 3);
  const raw = Buffer.concat(Array.from({ length: size }, () => row));
  const chunk = (type: string, data: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, "ascii");
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([Buffer.from(type, "ascii"), data])) >>> 0, 0);
    return Buffer.concat([head, data, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk("IHDR", ihdr), chunk("IDAT", deflateSync(raw)), chunk("IEND", Buffer.alloc(0))]);
}

const box = (b: { x: number; y: number; width: number; height: number }) => `position:absolute;left:${b.x}px;top:${b.y}px;width:${b.width}px;height:${b.height}px;box-sizing:border-box;margin:0`;

function loginPage(message: string): string {
  return `<!doctype html><html><head><title>Log in</title></head><body style="margin:0;font:16px sans-serif">
<h1 style="position:absolute;left:40px;top:10px;margin:0">Members log in</h1>
<form method="post" action="/login">
<input id="username" name="username" autocomplete="username" style="${box(FIELD_BOXES.username)}">
<input id="password" name="password" type="password" style="${box(FIELD_BOXES.password)}">
<button type="submit" style="${box(FIELD_BOXES.submit)}">Log in</button>
</form><p style="position:absolute;left:40px;top:260px">${message}</p></body></html>`;
}

function memberPage(path: string, cdnUrl: string): string {
  const images = MEMBER_IMAGES[path].map((src) => `<img src="${src}" width="24" height="24" alt="">`).join("\n");
  const cdn = path === "/members/a" ? `<img src="${cdnUrl}/pub.png" width="24" height="24" alt="">` : "";
  const links = path === "/members/" ? MEMBER_PAGES.slice(1).map((p) => `<a href="${p}">${p}</a>`).join(" ") : `<a href="/members/">index</a>`;
  return `<!doctype html><html><head><title>Members ${path}</title></head><body><h1>Members only: ${path}</h1>\n${images}\n${cdn}\n<p>${links}</p></body></html>`;
}

function cookieValue(req: IncomingMessage, name: string): string | null {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return v.join("=");
  }
  return null;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export async function startLoginSite(): Promise<LoginSite> {
  const sessions = new Set<string>();
  const requests: SeenRequest[] = [];
  const note = (host: string, req: IncomingMessage) => requests.push({ host, method: req.method ?? "", path: req.url ?? "", cookie: req.headers.cookie ?? null });
  const send = (res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store", ...headers });
    res.end(body);
  };
  const listeners: LoopbackListener[] = [];
  const site: LoginSite = {
    url: "", cdnUrl: "", loginUrl: "", requests, logins: 0, lastSession: null,
    expireSessions: () => sessions.clear(),
    close: async () => {
      for (const listener of listeners) await listener.close();
    },
  };
  const main = createServer((req, res) => {
    note("main", req);
    void (async () => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/login" && req.method === "POST") {
        const form = new URLSearchParams(await readBody(req));
        if (form.get("username") !== USER || form.get("password") !== PASSWORD) return send(res, 200, "text/html", loginPage("Wrong user name or password."));
        const id = randomBytes(16).toString("hex");
        sessions.add(id);
        site.logins += 1;
        site.lastSession = id;
        return send(res, 302, "text/html", "", { location: "/members/", "set-cookie": `session=${id}; HttpOnly; Path=/; SameSite=Lax` });
      }
      if (path === "/login") return send(res, 200, "text/html", loginPage(""));
      const loggedIn = sessions.has(cookieValue(req, "session") ?? "");
      if (path in MEMBER_IMAGES) {
        if (!loggedIn) return send(res, 302, "text/html", "", { location: `/login?next=${encodeURIComponent(path)}` });
        return send(res, 200, "text/html", memberPage(path, site.cdnUrl));
      }
      if (path.startsWith("/members/img/")) {
        if (!loggedIn) return send(res, 403, "text/plain", "forbidden");
        return send(res, 200, "image/png", png(path));
      }
      if (path === "/favicon.ico") return send(res, 404, "text/plain", "no");
      return send(res, 404, "text/plain", "not found");
    })();
  });
  const cdn = createServer((req, res) => {
    note(CDN_HOST, req);
    if (req.url === "/pub.png") return send(res, 200, "image/png", png("cdn"), { "set-cookie": "cdnpref=1; Path=/" });
    send(res, 404, "text/plain", "not found");
  });
  listeners.push(await listenOnLoopback(main), await listenOnLoopback(cdn));
  const [port, cdnPort] = listeners.map((l) => l.port);
  site.url = `http://127.0.0.1:${port}`;
  site.cdnUrl = `http://${CDN_HOST}:${cdnPort}`;
  site.loginUrl = `${site.url}/login`;
  return site;
}
