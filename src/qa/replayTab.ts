import type { CDPSession, Frame, Page, Protocol } from "puppeteer-core";
import { launchBrowser, type LaunchedBrowser } from "../browser/launch.js";
import type { AddressPolicy } from "../fetch/addressPolicy.js";
import { SocketGate } from "../fetch/socketGate.js";
import { textOfSnapshot } from "../page/pageText.js";
import { archivedUrlOf, ReplayTraffic, type ReplayRequest } from "./replayTraffic.js";
import { REPLAY_PREFIX, SW_READY_PATH, type ReplayServer } from "../replay/replayServer.js";
import type { ListedPage } from "./waczPages.js";

/** The crawl's viewport (browser/launch.ts): the replay is shown at the same size, so screenshots compare. */
export const VIEWPORT = { width: 1366, height: 900 };

export interface ReplayTabOptions {
  executablePath: string;
  /** What the replayed pages' WebSockets may connect to (through the tab's own socket gate). */
  addresses: AddressPolicy;
  /** Longest wait for a replayed page to load and its traffic to go quiet. */
  pageTimeoutMs: number;
  /** How long the replayed page's traffic must be quiet before it counts as loaded. */
  quietMs: number;
  /** Extra wait once it is (--postLoadDelay). */
  postLoadDelayMs: number;
}

/** One page as replayed, and what the crawl kept of it (read back through the same replay). */
export interface ReplayedPage {
  /** The replay frame's URL, or null when none appeared in time. */
  frameUrl: string | null;
  /** The viewport as the replay shows it, PNG. */
  screenshot: Buffer | null;
  text: string;
  requests: ReplayRequest[];
  /** The crawl's urn:view: screenshot of the page, PNG, when it kept one. */
  liveScreenshot: Buffer | null;
  /** The crawl's urn:text: record of the page, when it kept one. */
  liveText: string | null;
  /** The crawl's urn:pageinfo: record: what the page requested live. */
  livePageInfo: string | null;
  loadMs: number;
}

/** Longest wait, once the replayed document is complete, for its traffic to go quiet (the crawl's --netIdleWait default). */
const QUIET_CAP_MS = 10_000;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));
const digits = (ts: string | undefined): string => (ts ?? "").replace(/\D/g, "").slice(0, 14);

/**
 * A headless Chromium tab showing archived pages through ReplayWeb.page, one at a time, the way a visitor
 * of the archive sees them: the page in <replay-web-page embed=replayonly>, its resources answered by
 * ReplayWeb.page's service worker from the archive.
 */
export class ReplayTab {
  /** The frame showing the last page replayed, and from which source. */
  private shown: { source: string; frame: Frame } | null = null;

  private constructor(
    private readonly browser: LaunchedBrowser,
    private readonly gate: SocketGate,
    private readonly tab: Page,
    private readonly cdp: CDPSession,
    private readonly traffic: ReplayTraffic,
    private readonly server: ReplayServer,
    private readonly options: ReplayTabOptions,
  ) {}

  static async open(server: ReplayServer, options: ReplayTabOptions): Promise<ReplayTab> {
    const gate = await SocketGate.start(options.addresses);
    let browser: LaunchedBrowser;
    try {
      browser = await launchBrowser({ executablePath: options.executablePath, headless: true, socketGate: gate });
    } catch (err) {
      await gate.close();
      throw err;
    }
    try {
      const tab = await browser.browser.newPage();
      await tab.setViewport(VIEWPORT);
      const cdp = await tab.createCDPSession();
      await cdp.send("Network.enable");
      await tab.goto(server.url + SW_READY_PATH, { waitUntil: "load", timeout: options.pageTimeoutMs });
      await tab.waitForFunction(() => document.title !== "installing", { timeout: options.pageTimeoutMs });
      const state = await tab.title();
      if (state !== "sw-ready") throw new Error(`ReplayWeb.page's service worker did not start: ${state}`);
      return new ReplayTab(browser, gate, tab, cdp, new ReplayTraffic(cdp), server, options);
    } catch (err) {
      await browser.close();
      await gate.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    this.traffic.dispose();
    await this.browser.close();
    await this.gate.close();
  }

  /** Replay one page from `source` (as served) and read back what the crawl kept of it. */
  async replay(source: string, page: ListedPage): Promise<ReplayedPage> {
    const started = Date.now();
    const deadline = started + this.options.pageTimeoutMs;
    this.traffic.reset();
    await this.open(source, page);
    const frame = await this.loadedReplayFrame(deadline);
    this.shown = frame ? { source, frame } : null;
    if (this.options.postLoadDelayMs > 0) await sleep(this.options.postLoadDelayMs);
    const loadMs = Date.now() - started;
    const frameIds = await this.replayFrameIds();
    const requests = this.traffic.requests(frameIds);
    const [screenshot, text] = frame ? await Promise.all([this.screenshot(), this.replayText()]) : [null, ""];
    const archive = frame ? archivedUrlOf(frame.url()) : null;
    const kept = (kind: string) => (archive ? this.fetchKept(archive.collection, digits(page.ts) || archive.timestamp, `urn:${kind}:${page.url}`) : Promise.resolve(null));
    const [view, liveText, pageInfo] = await Promise.all([kept("view"), kept("text"), kept("pageinfo")]);
    return {
      frameUrl: frame?.url() ?? null,
      screenshot,
      text,
      requests,
      liveScreenshot: view,
      liveText: liveText?.toString("utf8") ?? null,
      livePageInfo: pageInfo?.toString("utf8") ?? null,
      loadMs,
    };
  }

  /**
   * Show the page: in the replay frame already open on the same archive (as browsertrix-crawler's QA does:
   * ReplayWeb.page and the archive's index stay loaded), else through a new embed page.
   */
  private async open(source: string, page: ListedPage): Promise<void> {
    const current = this.shown?.source === source && !this.shown.frame.detached ? this.shown.frame : null;
    const prefix = current ? archivedUrlOf(current.url())?.prefix : undefined;
    if (current && prefix) {
      await current.goto(`${prefix}${digits(page.ts)}mp_/${page.url}`, { waitUntil: "load", timeout: this.options.pageTimeoutMs });
      return;
    }
    const embed = `${this.server.url}/embed.html?${new URLSearchParams({ source, url: page.url, ts: digits(page.ts) }).toString()}`;
    await this.tab.goto(embed, { waitUntil: "load", timeout: this.options.pageTimeoutMs });
  }

  /** The replayed page's frame once its document is complete and its traffic quiet (or the deadline passed). */
  private async loadedReplayFrame(deadline: number): Promise<Frame | null> {
    let frame: Frame | null = null;
    let completeSince = 0;
    while (Date.now() < deadline) {
      frame = this.tab.frames().find((f) => archivedUrlOf(f.url()) !== null) ?? null;
      const complete = frame ? await frame.evaluate(() => document.readyState === "complete").catch(() => false) : false;
      completeSince = complete ? completeSince || Date.now() : 0;
      const quiet = this.traffic.inFlight() === 0 && this.traffic.quietFor() >= this.options.quietMs;
      // A page that never goes quiet (polling, a stream) is taken as it is after QUIET_CAP_MS.
      if (complete && (quiet || Date.now() - completeSince >= QUIET_CAP_MS)) return frame;
      await sleep(100);
    }
    return frame;
  }

  /** Ids of the frames showing archived content: the replayed page and its subframes. */
  private async replayFrameIds(): Promise<Set<string>> {
    const ids = new Set<string>();
    const walk = (node: Protocol.Page.FrameTree): void => {
      if (node.frame.url.includes(REPLAY_PREFIX)) ids.add(node.frame.id);
      for (const child of node.childFrames ?? []) walk(child);
    };
    walk((await this.cdp.send("Page.getFrameTree")).frameTree);
    return ids;
  }

  private async screenshot(): Promise<Buffer> {
    const { data } = await this.cdp.send("Page.captureScreenshot", { format: "png" });
    return Buffer.from(data, "base64");
  }

  /** The replayed page's text, extracted as the crawl extracts it, from the replay frames' documents only. */
  private async replayText(): Promise<string> {
    const snapshot = await this.cdp.send("DOMSnapshot.captureSnapshot", { computedStyles: [] });
    const documents = snapshot.documents.filter((doc) => (snapshot.strings[doc.documentURL] ?? "").includes(REPLAY_PREFIX));
    return textOfSnapshot({ ...snapshot, documents });
  }

  /** A record the crawl wrote beside the page (urn:view:, urn:text:, urn:pageinfo:), through the replay; null if absent. */
  private async fetchKept(collection: string, timestamp: string, urn: string): Promise<Buffer | null> {
    const host = this.tab.frames().find((f) => f.url().startsWith(`${this.server.url}/replay/?`));
    if (!host) return null;
    const url = `${this.server.url}${REPLAY_PREFIX}${collection}/${timestamp}mp_/${urn}`;
    const base64 = await host
      .evaluate(async (u: string) => {
        const response = await fetch(u);
        if (response.status !== 200) return null;
        const bytes = new Uint8Array(await response.arrayBuffer());
        let binary = "";
        for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
        return btoa(binary);
      }, url)
      .catch(() => null);
    return base64 === null ? null : Buffer.from(base64, "base64");
  }
}
