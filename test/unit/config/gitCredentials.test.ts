import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localCustomBehaviors } from "../../../src/config/customBehaviors.js";

// --customBehaviors git+http://TOKEN@host/repo.git: a real `git http-backend` on loopback that wants Basic
// credentials. While git asks (the server holds its answer), every process's command line is read: none may
// hold the token; nor may the clone's .git/config.

const TOKEN = "ghp_CloneToken7f7f7f";
let dir: string;
let server: Server;
let port: number;
const commandLinesWithToken: string[] = [];
const authorizations: string[] = [];

function commandLinesHolding(secret: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const line = readFileSync(`/proc/${entry}/cmdline`, "utf8").replace(/\0/g, " ");
      if (line.includes(secret)) found.push(`${entry}: ${line}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "git-credentials-"));
  const work = join(dir, "work");
  mkdirSync(join(work, "behaviors"), { recursive: true });
  writeFileSync(join(work, "behaviors", "d.js"), "class FromGit { static id = 'FromGit'; static isMatch() { return true; } async *run() {} }\n");
  const git = (...args: string[]) => execFileSync("git", ["-C", work, "-c", "user.name=t", "-c", "user.email=t@t", ...args]);
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-q", "-m", "behaviors");
  execFileSync("git", ["clone", "-q", "--bare", work, join(dir, "repo.git")]);
  execFileSync("git", ["-C", join(dir, "repo.git"), "config", "http.uploadpack", "true"]);

  server = createServer((req, res) => {
    authorizations.push(req.headers.authorization ?? "");
    commandLinesWithToken.push(...commandLinesHolding(TOKEN));
    if (req.headers.authorization !== `Basic ${Buffer.from(`${TOKEN}:`).toString("base64")}`) {
      return void res.writeHead(401, { "www-authenticate": 'Basic realm="git"' }).end();
    }
    const url = new URL(req.url ?? "/", "http://x");
    const backend = spawn("git", ["http-backend"], {
      env: {
        GIT_PROJECT_ROOT: dir, GIT_HTTP_EXPORT_ALL: "1", PATH_INFO: url.pathname, QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? "GET", CONTENT_TYPE: req.headers["content-type"] ?? "", PATH: process.env.PATH,
        ...(req.headers["content-encoding"] ? { HTTP_CONTENT_ENCODING: req.headers["content-encoding"] } : {}),
        ...(req.headers["git-protocol"] ? { GIT_PROTOCOL: String(req.headers["git-protocol"]) } : {}),
      },
    });
    req.pipe(backend.stdin);
    const chunks: Buffer[] = [];
    backend.stdout.on("data", (d: Buffer) => chunks.push(d));
    backend.on("close", () => {
      // A CGI answer: headers, a blank line, the body.
      const out = Buffer.concat(chunks);
      const split = out.indexOf("\r\n\r\n");
      const headers = out.subarray(0, split).toString().split("\r\n").map((l) => l.split(/:\s*/, 2) as [string, string]);
      const status = Number(headers.find(([k]) => k.toLowerCase() === "status")?.[1]?.split(" ")[0] ?? 200);
      res.writeHead(status, Object.fromEntries(headers.filter(([k]) => k.toLowerCase() !== "status")));
      res.end(out.subarray(split + 4));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe("--customBehaviors git+ with a token in the URL", () => {
  it("clones with it as a header: on no command line, not in the clone", async () => {
    const local = await localCustomBehaviors([`git+http://${TOKEN}@127.0.0.1:${port}/repo.git?branch=main&path=behaviors`], null);
    try {
      expect(local.paths).toHaveLength(1);
      expect(readdirSync(local.paths[0])).toEqual(["d.js"]);
      expect(authorizations.filter(Boolean).length).toBeGreaterThan(0);
      expect(commandLinesWithToken).toEqual([]);
      const clone = join(local.paths[0], "..");
      expect(readFileSync(join(clone, ".git", "config"), "utf8")).not.toContain(TOKEN);
    } finally {
      local.dispose();
    }
  }, 60_000);
});
