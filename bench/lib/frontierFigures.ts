// The frontier benchmark's measurement (bench/frontier.ts prints it; test/unit/frontier/frontierCosts.test.ts runs its smoke mode).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis, type Cluster } from "ioredis";
import { EmbeddedRedis } from "../../src/redis/embedded.js";
import { connectMaybeCluster } from "../../src/redis/cluster.js";
import { PageAdmission } from "../../src/scope/admission.js";
import { AddressPolicy } from "../../src/fetch/addressPolicy.js";
import { Frontier, type QueuedPage } from "../../src/frontier/frontier.js";
import { Membership } from "../../src/state/membership/membership.js";
import { startLocalCluster, type LocalCluster } from "./localCluster.js";

export interface FrontierBenchOptions {
  /** Links of the one page queued first (~30 characters each). */
  links: number;
  /** Pages then crawled through the frontier, LINKS_PER_PAGE links each. */
  pages: number;
  /** Hosts the links are spread over (127.0.0.x). */
  hosts: number;
  /** A 3-node loopback Redis Cluster instead of one redis-server. */
  cluster: boolean;
}

export interface FrontierFigures {
  mode: string;
  links: number;
  queued: number;
  hosts: number;
  bytesPerUrl: number;
  bytesPerNode?: number[];
  bytesPerUrlPerNode?: number[];
  roundTripsPerQueuedLink: number;
  commandsPerQueuedLink: number;
  pages: number;
  roundTripsPerPage: number | null;
  commandsPerPage: number | null;
  redisCpuMsPerPage: number | null;
  redisCpuUsPerQueuedLink: number;
}

export const LINKS_PER_PAGE = 20;

type Node = Redis;

function info(text: string, field: string): number {
  const line = text.split(/\r?\n/).find((l) => l.startsWith(`${field}:`));
  return Number(line?.slice(field.length + 1) ?? 0);
}

/** Per node: used_memory, round trips (commands the client sent), commands (commandstats calls, scripts' included), CPU seconds. */
async function sample(nodes: Node[], sent: number): Promise<{ memory: number[]; roundTrips: number; commands: number; cpu: number }> {
  const memory: number[] = [];
  const roundTrips = sent;
  let commands = 0;
  let cpu = 0;
  for (const node of nodes) {
    const text = await node.info("all");
    memory.push(info(text, "used_memory"));
    cpu += info(text, "used_cpu_sys") + info(text, "used_cpu_user");
    for (const m of text.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) commands += Number(m[1]);
  }
  return { memory, roundTrips, commands, cpu };
}

/** Queue one page's links, crawl pages through the frontier, and measure what Redis spent on it. */
export async function measureFrontier(options: FrontierBenchOptions): Promise<FrontierFigures> {
  const { links, pages, hosts } = options;
  /** ~30-character URLs on `hosts` hosts (127.0.x.y: no name to resolve). */
  const hostOf = (n: number) => `127.0.${Math.floor(n / 250)}.${1 + (n % 250)}`;
  const linkUrl = (i: number) => `http://${hostOf(i % hosts)}/p/${i.toString(36).padStart(12, "0")}`;
  const dir = mkdtempSync(join(tmpdir(), "bench-frontier-"));
  let server: EmbeddedRedis | null = null;
  let cluster: LocalCluster | null = null;
  let client: Redis | Cluster;
  let ports: number[];
  if (options.cluster) {
    cluster = await startLocalCluster(3, ["--appendonly", "no"]);
    client = (await connectMaybeCluster(cluster.url, "bench cluster")).client;
    ports = cluster.ports;
  } else {
    server = new EmbeddedRedis({ dataDir: join(dir, "redis"), persist: false });
    client = new Redis(await server.start());
    ports = [server.port];
  }
  // The figures are read on connections of their own: only the frontier's commands are counted as sent.
  const nodes = ports.map((port) => new Redis(port, "127.0.0.1"));
  let sent = 0;
  const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  (client as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
    sent += 1;
    return send(...args);
  };
  try {
    const membership = new Membership(client as Redis, "bench", "bench-1-abcd");
    const state = new Frontier(client, membership);
    const admission = new PageAdmission(state, AddressPolicy.outsideACrawl(), 0, null);
    await state.shards();
    // Settle the allocator and the per-call overheads before the first sample.
    await admission.admitMany([{ url: "http://127.0.0.1/", depth: 0, seedId: 0, extraHops: 0 }]);
    await state.take();
    const before = await sample(nodes, sent);
    for (let at = 0; at < links; at += 100_000) {
      const batch: QueuedPage[] = [];
      for (let i = at; i < Math.min(links, at + 100_000); i++) batch.push({ url: linkUrl(i), depth: 1, seedId: 0, extraHops: 0 });
      await admission.admitMany(batch);
    }
    const afterQueue = await sample(nodes, sent);
    // Crawled pages: take one, queue its links (half new, half links every page has), mark it done.
    for (let p = 0; p < pages; p++) {
      const page = await state.take();
      if (!page) throw new Error("the queue ran out before --pages pages were crawled");
      const found: QueuedPage[] = [];
      for (let j = 0; j < LINKS_PER_PAGE; j++) {
        const url = j % 2 ? linkUrl(links + p * LINKS_PER_PAGE + j) : `http://127.0.0.1/nav/${j}`;
        found.push({ url, depth: page.depth + 1, seedId: page.seedId, extraHops: 0 });
      }
      await admission.admitMany(found);
      await state.markDone(page.url);
    }
    const afterPages = await sample(nodes, sent);
    // Pages ever queued, less the seed, the crawled pages' new links and their 10 shared links: the big page's links queued.
    const crawled = Math.min(pages, links + 1);
    const queued = (await state.counts()).seen - 1 - crawled * (LINKS_PER_PAGE / 2) - (crawled ? LINKS_PER_PAGE / 2 : 0);
    const samplingCommands = nodes.length; // each sample's INFO, counted by the next one
    const perNode = afterQueue.memory.map((m, i) => m - before.memory[i]!);
    const bytes = perNode.reduce((a, b) => a + b, 0);
    const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
    return {
      mode: options.cluster ? "cluster-3" : "single", links, queued, hosts,
      bytesPerUrl: round(bytes / links, 1),
      ...(options.cluster ? { bytesPerNode: perNode, bytesPerUrlPerNode: perNode.map((b) => round(b / links, 1)) } : {}),
      roundTripsPerQueuedLink: round((afterQueue.roundTrips - before.roundTrips) / links, 4),
      commandsPerQueuedLink: round((afterQueue.commands - before.commands - samplingCommands) / links, 3),
      pages,
      roundTripsPerPage: pages ? round((afterPages.roundTrips - afterQueue.roundTrips) / pages) : null,
      commandsPerPage: pages ? round((afterPages.commands - afterQueue.commands - samplingCommands) / pages) : null,
      redisCpuMsPerPage: pages ? round(((afterPages.cpu - afterQueue.cpu) * 1000) / pages, 3) : null,
      redisCpuUsPerQueuedLink: round(((afterQueue.cpu - before.cpu) * 1e6) / links, 2),
    };
  } finally {
    client.disconnect();
    for (const node of nodes) node.disconnect();
    await server?.stop();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The smoke mode's size (CI). */
export const SMOKE = { links: 20_000, pages: 100 };
