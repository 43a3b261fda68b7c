/**
 * Which crawler runs which Chromium, written into the collection so that a later crawl there can clean up
 * after a crawler that was killed before it could close its browser (a kill the parent-death signal did
 * not cover: no setpriv, or a kill between spawn and prctl).
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { basename, join } from "node:path";
import { errorMessage, logger } from "../log/logger.js";
import { bootId, isPidAlive, pidNamespace, processArgs, processStartTime } from "../util/procfs.js";
import { browserProcesses, isProfileDir, killBrowserProcesses, removeProfileDir } from "./browserProcesses.js";

export interface BrowserRecord {
  crawlerPid: number;
  /** With the pid, names the crawler process even after its pid is reused (null where /proc is missing). */
  crawlerStartTime: string | null;
  bootId: string | null;
  /** The pid namespace the crawler pid is in (a container's own): only a crawler of ours is judged by its pid. */
  pidNamespace: string | null;
  host: string;
  profileDir: string;
  /** Null until the browser has started. */
  browserPid: number | null;
  startedAt: string;
}

export interface CleanedBrowser {
  crawlerPid: number;
  profileDir: string;
  /** Pids of the leftover Chromium processes that were killed. */
  killed: number[];
  /** Pids that could not be killed (another user's): the record is kept for a later try. */
  remaining: number[];
}

export class BrowserRecords {
  constructor(readonly dir: string) {}

  /** Record a browser about to be launched with this profile; returns the record's file. */
  add(profileDir: string): string {
    const record: BrowserRecord = {
      crawlerPid: process.pid,
      crawlerStartTime: processStartTime(process.pid),
      bootId: bootId(),
      pidNamespace: pidNamespace(),
      host: hostname(),
      profileDir,
      browserPid: null,
      startedAt: new Date().toISOString(),
    };
    const file = join(this.dir, `${process.pid}-${basename(profileDir)}.json`);
    mkdirSync(this.dir, { recursive: true });
    this.write(file, record);
    return file;
  }

  setBrowserPid(file: string, browserPid: number): void {
    const record = readRecord(file);
    if (record) this.write(file, { ...record, browserPid });
  }

  remove(file: string): void {
    rmSync(file, { force: true });
  }

  /**
   * Kill the leftover browsers of this machine's crawlers that are gone, remove their profiles and records.
   * Records of live crawlers, and of other machines or containers (a collection on a shared volume; a
   * container on the host's network has the host's name but pids of its own), are left alone.
   */
  async cleanLeftovers(): Promise<CleanedBrowser[]> {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((n) => n.endsWith(".json"));
    } catch {
      return [];
    }
    const cleaned: CleanedBrowser[] = [];
    for (const name of names) {
      const file = join(this.dir, name);
      const record = readRecord(file);
      if (!record) {
        logger.warn("browser", "removing an unreadable browser record", { file });
        rmSync(file, { force: true });
        continue;
      }
      if (!sameLocality(record) || crawlerAlive(record)) continue;
      if (!isProfileDir(record.profileDir)) {
        logger.warn("browser", "browser record names an unexpected profile folder: removing the record only", { file, profileDir: record.profileDir });
        rmSync(file, { force: true });
        continue;
      }
      if (record.browserPid !== null && isPidAlive(record.browserPid) && !browserProcesses(record.profileDir).includes(record.browserPid)) {
        logger.info("browser", "the recorded browser pid now belongs to another process: left alone", {
          browserPid: record.browserPid,
          command: processArgs(record.browserPid)?.[0] ?? null,
        });
      }
      const { killed, remaining } = await killBrowserProcesses(record.profileDir);
      const result = { crawlerPid: record.crawlerPid, profileDir: record.profileDir, killed, remaining };
      if (remaining.length) {
        logger.warn("browser", "cannot kill the leftover Chromium of a crawler that died", { ...result });
        continue;
      }
      try {
        removeProfileDir(record.profileDir);
      } catch (err) {
        logger.warn("browser", `cannot remove a leftover Chromium profile: ${errorMessage(err)}`, { profileDir: record.profileDir });
      }
      rmSync(file, { force: true });
      logger.info("browser", "cleaned up after the Chromium of a crawler that died", { ...result, startedAt: record.startedAt });
      cleaned.push(result);
    }
    return cleaned;
  }

  /** Atomically: a crawler killed mid-write leaves the old record or the new one, never half of one. */
  private write(file: string, record: BrowserRecord): void {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(record) + "\n");
    renameSync(tmp, file);
  }
}

function readRecord(file: string): BrowserRecord | null {
  try {
    const value = JSON.parse(readFileSync(file, "utf8")) as Partial<BrowserRecord>;
    if (typeof value.crawlerPid !== "number" || typeof value.profileDir !== "string" || typeof value.host !== "string") return null;
    return {
      crawlerPid: value.crawlerPid,
      crawlerStartTime: typeof value.crawlerStartTime === "string" ? value.crawlerStartTime : null,
      bootId: typeof value.bootId === "string" ? value.bootId : null,
      pidNamespace: typeof value.pidNamespace === "string" ? value.pidNamespace : null,
      host: value.host,
      profileDir: value.profileDir,
      browserPid: typeof value.browserPid === "number" ? value.browserPid : null,
      startedAt: typeof value.startedAt === "string" ? value.startedAt : "",
    };
  } catch {
    return null;
  }
}

/**
 * Whether the record's crawler pid can be checked here: same host name, same pid namespace (records
 * written before namespaces were recorded count as this host's, as they did then).
 */
function sameLocality(record: BrowserRecord): boolean {
  return record.host === hostname() && (record.pidNamespace === null || record.pidNamespace === pidNamespace());
}

/** Whether the crawler that wrote the record still runs: same boot, same pid, same start time. */
function crawlerAlive(record: BrowserRecord): boolean {
  if (record.bootId && record.bootId !== bootId()) return false;
  if (record.crawlerStartTime === null) return isPidAlive(record.crawlerPid);
  return processStartTime(record.crawlerPid) === record.crawlerStartTime;
}
