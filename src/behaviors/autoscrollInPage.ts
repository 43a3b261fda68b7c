/**
 * The autoscroll behavior's in-page half: functions puppeteer serializes into a frame (each one whole,
 * using nothing from this module), called by autoscroll.ts. They run in the page, so they use only the DOM.
 */

/** How tall the frame's scrolling areas are: growth of any of them is a feed loading more. */
export interface ScrollShape {
  /** The document's scroll height. */
  page: number;
  /** The scroll heights of the scrolling elements the last step found, summed. */
  areas: number;
  /** Elements in the document: a "load more" on a page that fits its viewport adds content, not height. */
  elements: number;
}

/** What one step did. */
export interface ScrollStep {
  /** The shape before the step moved anything: growth is measured from here. */
  before: ScrollShape;
  /** Areas scrolled (the window, if taller than the viewport, and scrolling elements). */
  scrolled: number;
  /** "Load more" buttons clicked. */
  clicked: number;
  /** Viewport moves made (each followed by two rendered frames). */
  moves: number;
  /** Elements IntersectionObservers watch in the frame: a page that may react to a scroll it missed. */
  targets: number;
  /** The page's reaction count (autoscrollTimers.ts) when the step began. */
  reactions: number;
  /** browsertrix-behaviors runs a site-specific behavior in this frame: it scrolls the way that site needs. */
  siteSpecific: boolean;
  /** The frame shows nothing (no width or no height: a hidden iframe, a messaging channel): nothing was moved. */
  hidden?: boolean;
}

/** The timer watch autoscrollTimers.ts leaves in the page (a type only: nothing is imported into the page). */
interface PageTimerWatch {
  reactionsPending(): number;
  reactions(): number;
  background(): string[];
  clocked(): string[];
  clocksFiredSince(since: number): boolean;
  react<T>(act: () => T): T;
  targets(): { target: Element; observer: IntersectionObserver; root: Element | Document | null }[];
  setTimeout(handler: () => void, ms: number): number;
  clearTimeout(id: number): void;
}

/** The page globals: the steps keep their scrolling elements for shapeChangeInPage(); the library's runner. */
interface AutoscrollGlobals {
  __wc_scrollAreas?: Element[];
  __bx_behaviors?: { mainBehavior?: unknown; selectMainBehavior?: () => void };
}

/** What a poll saw. */
export interface ShapePoll {
  shape: ScrollShape;
  /**
   * The page had nothing left to do at some moment of the poll: no timeout set in reaction to our scroll or
   * click pending (autoscrollTimers.ts) and two rendered frames since the poll began and since the last one
   * fired (what an observer or a timer's work sets off has run by then). False in a frame without the watch.
   */
  settled: boolean;
  /** The page's reaction count (autoscrollTimers.ts); 0 in a frame without the watch. */
  reactions: number;
  /** The page's background paths (autoscrollTimers.ts: polls, beacons); none in a frame without the watch. */
  background: string[];
  /** The paths the page's clocks request (autoscrollTimers.ts): no request of them is the step's doing. */
  clocked: string[];
}

/**
 * Poll the shape (briefly: no rendering needed) until it differs from `before`, the page has settled (if
 * `untilSettled`), or `waitMs` has passed. Settled also needs each short interval of the page (a clock that
 * may be watching the scroll position) to have fired since `clocksSince` (epoch ms; 0: not asked).
 */
export async function shapeChangeInPage(before: ScrollShape, waitMs: number, untilSettled: boolean, clocksSince = 0): Promise<ShapePoll> {
  const globals = self as unknown as AutoscrollGlobals;
  const timers = (self as unknown as Record<symbol, PageTimerWatch | undefined>)[Symbol.for("warc-crawler.autoscroll.timers")];
  const setTimer = timers ? timers.setTimeout : (handler: () => void, ms: number) => window.setTimeout(handler, ms);
  const shape = (): ScrollShape => ({
    page: (document.scrollingElement ?? document.documentElement).scrollHeight,
    areas: (globals.__wc_scrollAreas ?? []).reduce((sum, area) => sum + (area.isConnected ? area.scrollHeight : 0), 0),
    elements: document.getElementsByTagName("*").length,
  });
  const began = Date.now();
  const until = began + waitMs;
  let frames = 0;
  let done = false;
  // The frame count since which the page has had no reaction pending. Rendered frames only, not time: a frame
  // that is not rendered (or renders under 20 frames a second) does not settle, and its wait is the quiet one.
  let quietFrom: number | null = null;
  const tick = () => {
    frames += 1;
    if (!done) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  try {
    for (;;) {
      const now = shape();
      const changed = now.page !== before.page || now.areas !== before.areas || now.elements !== before.elements;
      if (!timers || timers.reactionsPending() > 0 || !timers.clocksFiredSince(clocksSince)) quietFrom = null;
      else quietFrom ??= frames;
      const settled = quietFrom !== null && frames - quietFrom >= 2;
      if (changed || (untilSettled && settled) || Date.now() >= until) return { shape: now, settled: settled && !changed, reactions: timers?.reactions() ?? 0, background: timers?.background() ?? [], clocked: timers?.clocked() ?? [] };
      await new Promise((resolve) => setTimer(() => resolve(undefined), 10));
    }
  } finally {
    done = true;
  }
}

/**
 * One step: scroll the window and every scrolling element from where it is to its end, then click each
 * visible "load more" button or link that does not navigate. A page is not walked a viewport at a time: each
 * area is moved only to what an IntersectionObserver watches further down (lazy images, a sentinel above a
 * footer), then to its end (a feed's trigger at the very end comes into view, a scroll listener sees the
 * end; all areas' ends at once), two rendered frames after each move, so that the observers see it. In a frame without the watch
 * (autoscrollTimers.ts), where nothing tells what the page watches, it is walked a viewport at a time.
 * Within `maxMoves` moves and `budgetMs` (the behaviors' deadline).
 */
export async function scrollStepInPage(limits: { maxMoves: number; budgetMs: number }): Promise<ScrollStep> {
  const until = Date.now() + limits.budgetMs;
  const globals = self as unknown as AutoscrollGlobals;
  const shape = (): ScrollShape => ({
    page: (document.scrollingElement ?? document.documentElement).scrollHeight,
    areas: (globals.__wc_scrollAreas ?? []).reduce((sum, area) => sum + (area.isConnected ? area.scrollHeight : 0), 0),
    elements: document.getElementsByTagName("*").length,
  });
  // The page's own timers and observers (autoscrollTimers.ts): ours are not the page's work.
  const timers = (self as unknown as Record<symbol, PageTimerWatch | undefined>)[Symbol.for("warc-crawler.autoscroll.timers")];
  const reactions = timers?.reactions() ?? 0;
  // The library picks its site-specific behavior when its run() starts; picking it here first, whichever
  // starts first, is the same pick (it keeps the first one).
  globals.__bx_behaviors?.selectMainBehavior?.();
  if (globals.__bx_behaviors?.mainBehavior) return { before: shape(), scrolled: 0, clicked: 0, moves: 0, targets: 0, reactions, siteSpecific: true };
  // A frame with no area (display:none, 0 by 0: a login channel, a tracker) shows nothing a scroll could load.
  if (window.innerWidth === 0 || window.innerHeight === 0) return { before: shape(), scrolled: 0, clicked: 0, moves: 0, targets: 0, reactions, siteSpecific: false, hidden: true };
  // requestAnimationFrame alone never fires in a frame that is not rendered: the timer caps the wait.
  const rendered = () =>
    new Promise<void>((resolve) => {
      const timer = timers ? timers.setTimeout(resolve, 100) : window.setTimeout(resolve, 100);
      requestAnimationFrame(() => requestAnimationFrame(() => ((timers ? timers.clearTimeout(timer) : window.clearTimeout(timer)), resolve())));
    });
  const root = document.scrollingElement ?? document.documentElement;
  const areas: Element[] = [];
  for (const element of Array.from(document.querySelectorAll("body *"))) {
    if (areas.length >= 50) break;
    if (element.clientHeight <= 0 || element.scrollHeight <= element.clientHeight + 1) continue;
    const overflow = getComputedStyle(element).overflowY;
    if (overflow === "auto" || overflow === "scroll" || overflow === "overlay") areas.push(element);
  }
  globals.__wc_scrollAreas = areas;
  const before = shape();
  const watched = timers?.targets() ?? [];
  // What changed where while the areas move: an observer whose targets change nothing when seen (a contents
  // list following the reader: the change is in the list) is no lazy loader, and its targets are not visited.
  const changed = new Set<Node>();
  const changes = new MutationObserver((records) => records.forEach((record) => changed.add(record.target)));
  changes.observe(document, { subtree: true, childList: true, attributes: true });
  const visited = new Map<IntersectionObserver, { seen: number; changed: boolean }>();
  const ignored = new Set<IntersectionObserver>();
  const scrolled = new Set<Element>();
  let moves = 0;
  // Each area's last move, to its end: made together, one rendering for all (a sidebar's end and the page's).
  const ends: { area: Element; end: number; from: number }[] = [];
  for (const area of [root, ...areas]) {
    const view = area === root ? window.innerHeight : area.clientHeight;
    // The end as it is now: what loads meanwhile is the next round's (one growth a round, not a chase).
    const end = area.scrollHeight - view;
    // Where this area's watched elements are, in its scroll coordinates, top down: those inside it (whatever
    // their observer's root), or for the window those in no scrolling element.
    const origin = area === root ? 0 : area.getBoundingClientRect().top + area.clientTop;
    const stops = timers
      ? watched
          .filter(({ target }) => (area === root ? !areas.some((a) => a.contains(target)) : area.contains(target)) && target.getClientRects().length > 0)
          .map(({ target, observer }) => ({ target, observer, at: target.getBoundingClientRect().top - origin + area.scrollTop }))
          .sort((a, b) => a.at - b.at)
      : null;
    const move = async (to: number): Promise<boolean> => {
      const from = area.scrollTop;
      area.scrollTop = Math.min(end, to);
      moves += 1;
      await rendered();
      // overflow: hidden (the window of a page whose feed is in a <div>): it does not scroll.
      if (area.scrollTop <= from) return false;
      scrolled.add(area);
      return true;
    };
    const going = () => moves < limits.maxMoves && Date.now() < until && area.scrollTop < end - 1;
    if (stops) {
      // A watched element below the view is brought near its top (inside an observer's margin that only
      // counts the top of the viewport); those the view then shows need no move of their own.
      for (const stop of stops) {
        if (!going()) break;
        if (ignored.has(stop.observer) || stop.at < area.scrollTop + view || stop.at > end + view) continue;
        if (!(await move(stop.at - view / 4))) break;
        for (const record of changes.takeRecords()) changed.add(record.target);
        const shown = stops.filter(({ at }) => at >= area.scrollTop && at < area.scrollTop + view);
        for (const { target, observer } of shown) {
          const tally = visited.get(observer) ?? { seen: 0, changed: false };
          tally.seen += 1;
          tally.changed ||= [...changed].some((node) => target.contains(node));
          visited.set(observer, tally);
          // Three of its targets seen, none of them changed: the rest will not be either.
          if (tally.seen >= 3 && !tally.changed) ignored.add(observer);
        }
      }
      if (going()) ends.push({ area, end, from: area.scrollTop });
    } else {
      while (going()) if (!(await move(area.scrollTop + view))) break;
    }
  }
  if (ends.length) {
    for (const { area, end } of ends) area.scrollTop = end;
    moves += ends.length;
    await rendered();
    for (const { area, from } of ends) if (area.scrollTop > from) scrolled.add(area);
  }
  changes.disconnect();
  // "Load more", "Show more posts", "View older": short texts only (a paragraph that mentions it is no button).
  // A bare "More" is left alone: as often a menu as a feed's button.
  const loadMore = /^(load|show|view|see|display)\s+(more|older|next)\b/i;
  const here = location.href.split("#")[0];
  const navigates = (element: Element): boolean => {
    if (element instanceof HTMLAnchorElement) {
      const href = element.getAttribute("href");
      if (element.target && element.target !== "_self") return true;
      if (!href || href.startsWith("#") || /^\s*javascript:/i.test(href)) return false;
      return element.href.split("#")[0] !== here;
    }
    // A submit button posts its form (a button in a form is one unless its type says otherwise): a navigation.
    return (element instanceof HTMLButtonElement || element instanceof HTMLInputElement) && element.form !== null && element.type === "submit";
  };
  let clicked = 0;
  for (const element of Array.from(document.querySelectorAll<HTMLElement>("button, a, [role=button], input[type=button], input[type=submit]"))) {
    if (clicked >= 10) break;
    const label = (element instanceof HTMLInputElement ? element.value : element.innerText || element.getAttribute("aria-label") || "").replace(/\s+/g, " ").trim();
    if (!label || label.length > 40 || !loadMore.test(label)) continue;
    if (!element.getClientRects().length || (element as HTMLButtonElement).disabled || element.getAttribute("aria-disabled") === "true" || navigates(element)) continue;
    element.scrollIntoView({ block: "center" });
    // As a reaction: the timeouts its handlers set are waited for, as a scroll listener's are.
    if (timers) timers.react(() => element.click());
    else element.click();
    clicked += 1;
  }
  return { before, scrolled: scrolled.size, clicked, moves, targets: watched.length, reactions, siteSpecific: false };
}

/**
 * Move each area a viewport back from its end and back again, two rendered frames apart: a feed whose
 * trigger fired late (a busy page) or whose observer missed the change gets another transition to see.
 * Every area (`all`: the page reacted to the step), or only those holding elements an IntersectionObserver
 * watches (the window: those in no scrolling element). Returns the moves made.
 */
export async function nudgeInPage(all: boolean): Promise<number> {
  const globals = self as unknown as AutoscrollGlobals;
  // The page's own timers (autoscrollTimers.ts): ours are not the page's work.
  const timers = (self as unknown as Record<symbol, PageTimerWatch | undefined>)[Symbol.for("warc-crawler.autoscroll.timers")];
  const rendered = () =>
    new Promise<void>((resolve) => {
      const timer = timers ? timers.setTimeout(resolve, 100) : window.setTimeout(resolve, 100);
      requestAnimationFrame(() => requestAnimationFrame(() => ((timers ? timers.clearTimeout(timer) : window.clearTimeout(timer)), resolve())));
    });
  const root = document.scrollingElement ?? document.documentElement;
  const areas = (globals.__wc_scrollAreas ?? []).filter((a) => a.isConnected);
  const watched = (timers?.targets() ?? []).map(({ target }) => target);
  const holds = (area: Element) => (area === root ? watched.some((t) => !areas.some((a) => a.contains(t))) : watched.some((t) => area.contains(t)));
  // All of them together: back, one rendering, to the end, another.
  const view = (area: Element) => (area === root ? window.innerHeight : area.clientHeight);
  const end = (area: Element) => area.scrollHeight - view(area);
  const nudged = [root, ...areas].filter((area) => (all || holds(area)) && end(area) > 0);
  if (!nudged.length) return 0;
  for (const area of nudged) area.scrollTop = Math.max(0, end(area) - view(area));
  await rendered();
  for (const area of nudged) area.scrollTop = end(area);
  await rendered();
  return nudged.length * 2;
}
