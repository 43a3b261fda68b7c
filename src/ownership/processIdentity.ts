/**
 * Who a crawler process is, across machines and containers. A hostname does not name a pid namespace:
 * containers run with `--network host` (or Kubernetes `hostNetwork`) share the host's name while each
 * has pids of its own, so "same hostname" must never be read as "I can see its pid". A process is named
 * by its pid namespace (boot id + namespace inode: the "locality" whose pids this process can check),
 * its pid and its start time (so a reused pid is never taken for it). Only a process of the same
 * locality is judged by its pid; any other one is alive exactly while its heartbeat is.
 */
import { createHash, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { bootId, isPidAlive, pidNamespace, processStartTime } from "../util/procfs.js";

/**
 * The set of processes whose pids this process can check: one boot of one kernel, one pid namespace.
 * A short hash (process ids are written in every lease); null when either part is unknown.
 */
export function localityTag(): string | null {
  const boot = bootId();
  const namespace = pidNamespace();
  if (!boot || !namespace) return null;
  return createHash("sha256").update(`${boot}\n${namespace}`).digest("hex").slice(0, 16);
}

export interface ProcessIdentity {
  host: string;
  pid: number;
  /** Clock ticks since boot (/proc/<pid>/stat), or null where unknown. */
  startTime: string | null;
  /** See localityTag; null where unknown: such a process is judged by its heartbeat only. */
  locality: string | null;
}

// "<host>-<pid>-<start time>-<locality>-<random>": the host may contain dashes, so it is read from the end.
const ID_PATTERN = /^(.*)-(\d+)-(\d+|x)-([0-9a-f]{16}|x)-([0-9a-f]+)$/;

/** This process's id in a crawl: readable (host, pid) and unique across namespaces and reboots. */
export function newProcessId(random: string): string {
  return `${hostname()}-${process.pid}-${processStartTime(process.pid) ?? "x"}-${localityTag() ?? "x"}-${random}`;
}

/** The identity a process id names, or null for ids of another form (older versions: heartbeat only). */
export function parseProcessId(id: string): ProcessIdentity | null {
  const match = ID_PATTERN.exec(id);
  if (!match) return null;
  return { host: match[1], pid: Number(match[2]), startTime: match[3] === "x" ? null : match[3], locality: match[4] === "x" ? null : match[4] };
}

/**
 * Whether `id` names a process this one can see is gone without waiting for its heartbeat: same
 * locality (boot and pid namespace), and its pid is free or now belongs to a process started at another
 * time. Any other process (another machine, another container, an unknown id) is never judged so.
 */
export function isLocalProcessGone(id: string): boolean {
  const identity = parseProcessId(id);
  const here = localityTag();
  if (!identity || identity.locality === null || here === null || identity.locality !== here) return false;
  if (!isPidAlive(identity.pid)) return true;
  return identity.startTime !== null && processStartTime(identity.pid) !== identity.startTime;
}

/** A lease holder's id: this process's id with a random part of its own (one per lease taken). */
export function newHolderId(): string {
  return newProcessId(randomUUID().slice(0, 8));
}

/**
 * Whether the holder a lease value names is provably gone (isLocalProcessGone). The value is a holder id,
 * or "<holder id>:<take>" where each take of a lease has a token of its own (import leases).
 */
export function isHolderGone(leaseValue: string): boolean {
  const take = leaseValue.indexOf(":");
  return isLocalProcessGone(take < 0 ? leaseValue : leaseValue.slice(0, take));
}
