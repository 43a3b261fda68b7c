/**
 * What the live view sends its page over the WebSocket (and, with --screencastRedis, through the crawl
 * Redis), as JSON. browsertrix-crawler's three messages keep their form, so a viewer written for its
 * screencast works here: `init`, `screencast` ({id, url, data}: data a base64 image, absent when only the
 * worker's state changed) and `close`. Ours add the worker's state and label, the progress figures and
 * warnings; a browsertrix viewer ignores them.
 */

/** What a worker is doing: loading a page, between two pages, waiting for pages others may still add, or finished. */
export type WorkerState = "loading" | "between pages" | "waiting" | "done";

export interface InitPacket {
  msg: "init";
  width: number;
  height: number;
  /** Workers of this process (browsertrix-crawler: its browsers). */
  browsers: number;
}

export interface WorkerPacket {
  msg: "screencast";
  /** The worker: its number (0, 1...) alone, or "<process>/<number>" with --screencastRedis. */
  id: number | string;
  /** The page the worker is on (empty before its first page). */
  url: string;
  /** Base64 JPEG of the tab; absent when the packet only tells a new state or URL (the last frame stays). */
  data?: string;
  state: WorkerState;
  /** Which process (host:pid) and worker, for the label. */
  process: string;
  worker: number;
}

export interface ClosePacket {
  msg: "close";
  id: number | string;
}

/** The crawl's progress figures (as the progress line shows them); `final` once the crawl has ended. */
export interface StatsPacket {
  msg: "stats";
  crawled: number;
  queued: number;
  pending: number;
  failed: number;
  failedAttempts: number;
  /** Bytes this process wrote. */
  bytesWritten: number;
  elapsedSeconds: number;
  status?: string;
  final?: boolean;
}

export interface WarningPacket {
  msg: "warning";
  timestamp: string;
  level: "warn" | "error";
  context: string;
  message: string;
  url?: string;
  process: string;
}

export type LivePacket = InitPacket | WorkerPacket | ClosePacket | StatsPacket | WarningPacket;

/** The key under which a packet replaces an older one (the latest frame of a worker, the latest stats); null: kept as it is. */
export function replacementKey(packet: LivePacket): string | null {
  switch (packet.msg) {
    case "screencast":
    case "close":
      return `worker ${packet.id}`;
    case "stats":
    case "init":
      return packet.msg;
    case "warning":
      return null;
  }
}
