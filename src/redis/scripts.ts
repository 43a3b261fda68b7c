import { createHash } from "node:crypto";
import type { Cluster, Redis } from "ioredis";

type EvalArg = string | number | Buffer;

/**
 * Every Lua script the crawler runs through this client goes out as EVALSHA of its text: a few dozen bytes
 * a call instead of the script (the crawl state's scripts are ~1 KB each and run several times a page; they
 * were over 90% of a crawl's bytes to Redis). A server that does not know the script yet (first call, a
 * restart, a failover, another cluster node) answers NOSCRIPT without running anything, and the call goes
 * once more as EVAL, which caches it there. Callers keep calling `eval`: this replaces it on the client,
 * as ioredis's own defineCommand scripts do per command.
 */
export function evalScriptsBySha(client: Redis | Cluster): void {
  const shas = new Map<string, string>();
  const evalText = client.eval.bind(client) as (script: string, numKeys: number, ...args: EvalArg[]) => Promise<unknown>;
  const evalSha = client.evalsha.bind(client) as (sha: string, numKeys: number, ...args: EvalArg[]) => Promise<unknown>;
  const bySha = async (script: string, numKeys: number, ...args: EvalArg[]): Promise<unknown> => {
    let sha = shas.get(script);
    if (!sha) {
      sha = createHash("sha1").update(script).digest("hex");
      shas.set(script, sha);
    }
    try {
      return await evalSha(sha, numKeys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith("NOSCRIPT")) throw err;
      return evalText(script, numKeys, ...args);
    }
  };
  client.eval = bySha as typeof client.eval;
}
