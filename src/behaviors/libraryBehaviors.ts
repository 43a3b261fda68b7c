/**
 * Runs the browsertrix-behaviors library's behaviors in one frame, as its BehaviorManager.run() does but
 * without its fixed waits, and times each one. run() sleeps 500 ms after starting them before it asks
 * whether they are done, and the library's autofetch reports done no sooner than 500 ms after its start
 * even with nothing to fetch: on every page the behaviors took at least half a second, whatever they had
 * to do. Here:
 * - autofetch is done as soon as the fetches it queued at its start have ended (none: at once); those it
 *   queues later, for content the page adds, go on and the crawler's network-idle wait covers them;
 * - autoplay waits the library's 500 ms for media to start playing only on a page that has media, and a stream
 *   player (MediaSource) only until it has its first data, not to its end: the capture fetches the stream whole;
 * - everything else (site-specific and custom behaviors) is awaited as run() does. The library's autoscroll
 *   is off: ours (autoscroll.ts) runs beside this.
 * The library's internals it relies on are those of browsertrix-behaviors 0.8.4 (package.json pins it);
 * a manager without them is run with its own run().
 *
 * Evaluated in the page (puppeteer serializes it): self-contained, no imports or outer names.
 * @returns the ms from the start to the end of each behavior, by the library's names (e.g. "Autoscroll"),
 *   or null when the library is not in the frame.
 */
export async function driveLibraryBehaviors(): Promise<Record<string, number> | null> {
  interface LibraryBehavior {
    id?: string;
    start(): unknown;
    done(): Promise<unknown>;
  }
  interface LibraryAutofetch extends LibraryBehavior {
    numPending?: number;
    pendingQueue?: unknown[];
  }
  interface LibraryManager {
    behaviors?: LibraryBehavior[];
    started?: boolean;
    autofetch?: LibraryAutofetch;
    mainBehavior?: LibraryBehavior & { cleanup?(): void } | null;
    mainBehaviorClass?: { id?: string; cleanup?: unknown };
    selectMainBehavior?(): unknown;
    unpause?(): void;
    run(): Promise<unknown>;
  }
  const manager = (self as unknown as { __bx_behaviors?: LibraryManager }).__bx_behaviors;
  if (!manager) return null;
  const began = performance.now();
  const nameOf = (behavior: LibraryBehavior) => behavior.id ?? (behavior.constructor as { id?: string }).id ?? behavior.constructor.name;
  if (typeof manager.selectMainBehavior !== "function" || !Array.isArray(manager.behaviors) || typeof manager.unpause !== "function") {
    await manager.run();
    return { library: Math.round(performance.now() - began) };
  }
  // Called again in the same document: the library's run() only resumes what it paused.
  if (manager.started) {
    manager.unpause();
    return {};
  }
  manager.selectMainBehavior();
  if (document.readyState !== "complete") await new Promise((resolve) => self.addEventListener("load", resolve, { once: true }));

  const hasMedia = (root: ParentNode): boolean =>
    root.querySelector("video, audio") !== null || Array.from(root.querySelectorAll("*")).some((el) => el.shadowRoot !== null && hasMedia(el.shadowRoot));
  const behaviors = manager.behaviors;
  const started = performance.now();
  for (const behavior of behaviors) behavior.start();
  manager.started = true;

  // The browser's own timer when the autoscroll watches the page's (autoscrollTimers.ts): this wait is not the page's work.
  const timers = (self as unknown as Record<symbol, { setTimeout(handler: () => void, ms: number): number } | undefined>)[Symbol.for("warc-crawler.autoscroll.timers")];
  const wait = (handler: () => void, ms: number) => (timers ? timers.setTimeout(handler, ms) : window.setTimeout(handler, ms));
  const autofetch = manager.autofetch;
  const finished = (behavior: LibraryBehavior): Promise<unknown> => {
    if (behavior === autofetch && autofetch.numPending === 0 && autofetch.pendingQueue?.length === 0) return Promise.resolve();
    if (nameOf(behavior) === "Autoplay" && !hasMedia(document)) return behavior.done();
    if (nameOf(behavior) === "Autoplay") return new Promise<void>((resolve) => wait(resolve, 500)).then(() => Promise.race([behavior.done(), streamsStarted()]));
    return behavior.done();
  };
  // The library's autoplay waits for a stream player (MediaSource, a blob: source) to play to its end. The
  // capture fetches an HLS or DASH stream's every segment itself (capture/adaptiveStreams.ts): once each
  // such player has its first data (or failed), up to STREAM_START_MS, the autoplay has done its part.
  const mediaOf = (root: ParentNode): HTMLMediaElement[] => [
    ...Array.from(root.querySelectorAll<HTMLMediaElement>("video, audio")),
    ...Array.from(root.querySelectorAll("*")).flatMap((el) => (el.shadowRoot ? mediaOf(el.shadowRoot) : [])),
  ];
  const STREAM_START_MS = 6000;
  const HAVE_FUTURE_DATA = 3;
  const streamsStarted = () => new Promise<void>((resolve) => {
    const since = performance.now();
    const check = () => {
      const waiting = mediaOf(document).filter((m) => m.currentSrc.startsWith("blob:") && !m.error && !m.ended && m.readyState < HAVE_FUTURE_DATA);
      if ((!waiting.length && performance.now() - since >= 1000) || performance.now() - since >= STREAM_START_MS) resolve();
      else wait(check, 250);
    };
    check();
  });
  const times: Record<string, number> = {};
  await Promise.allSettled(behaviors.map(async (behavior) => {
    await finished(behavior).catch(() => undefined);
    times[nameOf(behavior)] = Math.round(performance.now() - started);
  }));
  if (manager.mainBehavior && typeof manager.mainBehaviorClass?.cleanup === "function") manager.mainBehavior.cleanup?.();
  return times;
}

/**
 * One more autofetch pass over the whole document once the behaviors have finished, then its fetches awaited.
 * The library reads the srcset and data-* attributes of content a page adds only 1 s after adding it (its
 * MutationObserver defers that): the autoscroll ends sooner than that after a feed's last batch, so that
 * batch's other image candidates were never fetched. Already queued URLs are skipped by the library.
 * Evaluated in the page: self-contained.
 * @returns how many URLs the pass queued, "unfinished" when its fetches outlasted `timeoutMs`, or null when
 *   autofetch is not on in this frame.
 */
export async function sweepAutofetch(timeoutMs: number): Promise<number | "unfinished" | null> {
  interface LibraryAutofetch {
    active?: boolean;
    urlSet?: Set<string>;
    numPending?: number;
    pendingQueue?: unknown[];
    extractSrcSrcSetAll?(root: ParentNode): void;
    extractDataAttributes?(root: ParentNode): void;
    extractStyleSheets?(): void;
  }
  const autofetch = (self as unknown as { __bx_behaviors?: { autofetch?: LibraryAutofetch } }).__bx_behaviors?.autofetch;
  if (!autofetch?.active || !autofetch.urlSet || typeof autofetch.extractSrcSrcSetAll !== "function") return null;
  const before = autofetch.urlSet.size;
  autofetch.extractSrcSrcSetAll(document);
  autofetch.extractDataAttributes?.(document);
  autofetch.extractStyleSheets?.();
  const queued = autofetch.urlSet.size - before;
  const timers = (self as unknown as Record<symbol, { setTimeout(handler: () => void, ms: number): number } | undefined>)[Symbol.for("warc-crawler.autoscroll.timers")];
  const wait = (ms: number) => new Promise<void>((resolve) => (timers ? timers.setTimeout(resolve, ms) : window.setTimeout(resolve, ms)));
  const until = performance.now() + timeoutMs;
  while ((autofetch.numPending ?? 0) > 0 || (autofetch.pendingQueue?.length ?? 0) > 0) {
    if (performance.now() >= until) return "unfinished";
    await wait(25);
  }
  return queued;
}
