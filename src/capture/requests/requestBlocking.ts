import type { CDPSession, Protocol } from "puppeteer-core";
import type { Blocking, BlockedRequest } from "../../block/blocking.js";
import { textVerdict, type BlockRule } from "../../block/rules.js";
import { logger } from "../../log/logger.js";
import type { DroppedRequests } from "../bodies/droppedRequests.js";

interface FrameInfo {
  url: string;
  parentId: string | null;
}

/** Text rules waiting for their frame's response, at most this many (a request that fails never gets there). */
const MAX_PENDING_TEXT = 1000;

/**
 * --blockRules and --blockAds in one tab, at the Fetch domain's two stages (pageCapture.ts pauses every
 * request there). At the request stage a blocked request is never sent: Fetch.failRequest
 * (BlockedByClient), or, for a frame's own document with a block message, the message answered in its
 * place (Fetch.fulfillRequest), shown in the frame and never archived. A frame document that a
 * frameTextMatch rule names is let through, and judged at its response by the text the browser got:
 * blocked, it is not rendered nor stored. The page's own document is never blocked.
 *
 * The frames' URLs (which the rules' inFrameUrl is matched against) are followed through the Page domain.
 */
export class TabBlocking {
  private readonly frames = new Map<string, FrameInfo>();
  /** Request id -> the text rule its response is judged by. */
  private readonly textChecks = new Map<string, { rule: BlockRule; message: string }>();

  private constructor(
    private readonly cdp: CDPSession,
    private readonly blocking: Blocking,
    private readonly mainFrameId: string,
  ) {}

  /** The tab's blocking, or null when the run blocks nothing. Call before Fetch.enable. */
  static async start(blocking: Blocking | null, cdp: CDPSession, mainFrameId: string): Promise<TabBlocking | null> {
    if (!blocking) return null;
    const tab = new TabBlocking(cdp, blocking, mainFrameId);
    cdp.on("Page.frameAttached", (e: Protocol.Page.FrameAttachedEvent) => tab.frames.set(e.frameId, { url: "about:blank", parentId: e.parentFrameId }));
    cdp.on("Page.frameNavigated", (e: Protocol.Page.FrameNavigatedEvent) => tab.frames.set(e.frame.id, { url: e.frame.url, parentId: e.frame.parentId ?? null }));
    cdp.on("Page.navigatedWithinDocument", (e: Protocol.Page.NavigatedWithinDocumentEvent) => {
      const frame = tab.frames.get(e.frameId);
      if (frame) frame.url = e.url;
    });
    cdp.on("Page.frameDetached", (e: Protocol.Page.FrameDetachedEvent) => {
      if (e.reason !== "swap") tab.frames.delete(e.frameId);
    });
    if (mainFrameId) {
      await cdp.send("Page.enable");
      const { frameTree } = await cdp.send("Page.getFrameTree");
      tab.addTree(frameTree, null);
    }
    return tab;
  }

  private addTree(tree: Protocol.Page.FrameTree, parentId: string | null): void {
    this.frames.set(tree.frame.id, { url: tree.frame.url, parentId });
    for (const child of tree.childFrames ?? []) this.addTree(child, tree.frame.id);
  }

  /** At the request stage: true when the request was blocked (answered here; nothing more to do). */
  async atRequest(event: Protocol.Fetch.RequestPausedEvent, page: string | null): Promise<boolean> {
    const { request, requestId, frameId, resourceType } = event;
    if (!/^https?:/i.test(request.url)) return false;
    const navigation = resourceType === "Document";
    // The page's own document: never blocked (a page is kept out with --exclude, as in browsertrix-crawler).
    if (navigation && frameId === this.mainFrameId) {
      this.blocking.pageDocument(request.url);
      return false;
    }
    const frame = frameId ? this.frames.get(frameId) : undefined;
    const frameUrl = (navigation ? (frame?.parentId ? this.frames.get(frame.parentId)?.url : undefined) : frame?.url) ?? "";
    const verdict = this.blocking.judge({ url: request.url, frameUrl, navigation });
    if (verdict.action === "allow") return false;
    if (verdict.action === "checkText") {
      if (this.textChecks.size >= MAX_PENDING_TEXT) this.textChecks.clear();
      this.textChecks.set(requestId, { rule: verdict.rule, message: verdict.message });
      return false;
    }
    // Answered here (the message), the request never pauses at the response stage: nothing is captured.
    await this.refuse(requestId, navigation ? verdict.message : "");
    this.blocking.record({ url: request.url, by: verdict.by, rule: verdict.rule, page, frameUrl: frameUrl || null, resourceType });
    return true;
  }

  /** At the response stage: true when the frame's text blocked it (answered here; not to be captured). */
  async atResponse(event: Protocol.Fetch.RequestPausedEvent, page: string | null, dropped: DroppedRequests): Promise<boolean> {
    const { requestId } = event;
    const check = this.textChecks.get(requestId);
    if (!check) return false;
    this.textChecks.delete(requestId);
    const text = await dropped.unlessDropped(event.networkId ?? null, this.cdp.send("Fetch.getResponseBody", { requestId })).then(
      (r) => (r.base64Encoded ? Buffer.from(r.body, "base64").toString("utf8") : r.body),
      () => null,
    );
    const blocked = textVerdict(check.rule, text);
    logger.debug("blocking", blocked ? "frame blocked by its text" : "frame allowed by its text", { url: event.request.url, rule: check.rule.text });
    if (!blocked) return false;
    await this.refuse(requestId, check.message);
    const frame = event.frameId ? this.frames.get(event.frameId) : undefined;
    const parent = frame?.parentId ? this.frames.get(frame.parentId)?.url ?? null : null;
    this.blocking.record({ url: event.request.url, by: "rule", rule: check.rule.text, page, frameUrl: parent, resourceType: event.resourceType } satisfies BlockedRequest);
    return true;
  }

  /** Answer with the message (a frame's document), else fail the request. */
  private async refuse(requestId: string, message: string): Promise<void> {
    if (message) {
      const body = Buffer.from(message, "utf8").toString("base64");
      const headers = [{ name: "Content-Type", value: "text/html; charset=utf-8" }, { name: "Cache-Control", value: "no-store" }];
      const answered = await this.cdp.send("Fetch.fulfillRequest", { requestId, responseCode: 200, responseHeaders: headers, body }).then(() => true, () => false);
      if (answered) return;
    }
    await this.cdp.send("Fetch.failRequest", { requestId, errorReason: "BlockedByClient" }).catch(() => undefined);
  }
}
