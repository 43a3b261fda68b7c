import { IN_PAGE_SCRIPT_NAMES, namedScript } from "../util/requestInitiators.js";

/**
 * The autoscroll's view of how a page reacts to being scrolled: a feed whose trigger is debounced (a scroll
 * listener that fetches 300 ms after the scrolling stops) asks for its next batch with nothing in flight and
 * nothing grown for that long. Knowing that such a timer is pending, the autoscroll waits for it; knowing
 * that none is, it need not wait on a page where nothing happens (most pages), whatever clocks and
 * animations that page runs: only timeouts set in reaction to a scroll or a click are waited for. And which
 * elements IntersectionObservers watch (lazy images, a feed's sentinel): the places a scroll has to show,
 * so that it need not walk a long page a viewport at a time.
 *
 * And which requests the page makes by itself: a path fetched by a clock (an interval, a timeout not set in
 * reaction) again and again and never in reaction to a scroll or click is a poll or a beacon, whose traffic
 * says nothing about a feed loading more (requests the page sends in reaction count as reactions).
 *
 * Installed in every document of the tab before the page's own scripts (a library that keeps its own
 * reference to setTimeout, as lodash's debounce does, gets the watched one). Only timeouts are watched,
 * and only short ones: an interval or a long timeout is a clock, not a reaction to the scrolling.
 */

/**
 * Timeouts this short count as pending work: those the autoscroll's quiet wait (500 ms) would have seen
 * fire. (browsertrix-behaviors' autofetch schedules 1 s timeouts on every DOM change: not counted.)
 */
export const SHORT_TIMEOUT_MS = 500;

/**
 * A one-shot timeout of this long (ms, least and most), set by the page's own code once the document has loaded
 * (its load handlers, a promise it waited on then) rather than by a clock or in reaction to a move, is work the
 * page put off until a moment after its load: a toolbar, a chat widget, the rest of a feed loaded "a few seconds
 * later". Or a watchdog (a request's time limit, whose handler gives up on it): a timeout cannot be fired early
 * without risking the page's error path, so those due soon are waited for (behaviors.ts). Those set while the
 * document was still loading are its scripts' own pacing (a font loader's time limit, a carousel's first
 * turn), not waited for. (Shorter ones are a framework scheduling its next task: they fire on their own at once.)
 */
export const DEFERRED_TIMEOUT_MS = [50, 5000] as const;

/** A reaction's timers keep counting as one for this long after our move or click (a debounce that re-arms). */
export const REACTION_CHAIN_MS = 2000;

/**
 * A path a clock requests twice with no scroll in between (and never in reaction) is the page's background
 * traffic: a poll asks again whether or not anything moved, a clock that checks where the reader is (an
 * older infinite scroll) asks for the next batch after a scroll.
 */
/** Intervals this short may be a clock watching the scroll position: a wait lets each fire once. */
export const WATCHING_CLOCK_MS = 300;

/** What the watch leaves in the page, under Symbol.for(TIMER_WATCH_KEY) of the frame's global. */
export interface PageTimerWatch {
  /** Short timeouts scheduled and neither fired nor cleared. */
  pending(): number;
  /**
   * Of those, the ones set in reaction to a scroll or a click: by a scroll listener (or an animation frame
   * it asked for), an IntersectionObserver's callback, a click handler run by react(), or such a timeout's
   * own handler. A page's clock or animation loop is no reaction: it does not hold up the autoscroll.
   */
  reactionsPending(): number;
  /** Reaction timeouts set so far: whether the page reacted to a move at all (observers: see targets()). */
  reactions(): number;
  /**
   * The page's background paths (origin + path, as requestKey() in requestWatch.ts): each requested by a
   * clock (fetch, XMLHttpRequest, sendBeacon) twice with no scroll in between, and never in reaction.
   */
  background(): string[];
  /** The paths clocks request and none in reaction: background or not, requests the page makes by itself. */
  clocked(): string[];
  /** Every interval of WATCHING_CLOCK_MS or less has fired since `since` (epoch ms). */
  clocksFiredSince(since: number): boolean;
  /**
   * The page's deferred timeouts due within `withinMs`: one-shot timeouts of DEFERRED_TIMEOUT_MS set by the page's
   * own code once the document had loaded, not by a clock nor in reaction to a move, not yet fired nor cleared. How many, and in how long the
   * last of them is due (0: none); and how long ago the last one fired (null: none did), whose handler's requests
   * may not have reached the crawler yet.
   */
  deferredDue(withinMs: number): DeferredTimers;
  /** Run `act` (our click) as a reaction: what its handlers start counts. */
  react<T>(act: () => T): T;
  /** The elements IntersectionObservers watch now, with each one's observer and its root (null: the viewport). */
  targets(): { target: Element; observer: IntersectionObserver; root: Element | Document | null }[];
  /** The browser's own setTimeout/clearTimeout: the autoscroll's and the library's waits are not the page's work. */
  setTimeout(handler: () => void, ms: number, ...args: unknown[]): number;
  clearTimeout(id?: number): void;
}

/** The page's deferred timeouts as the behaviors' end reads them (PageTimerWatch.deferredDue). */
export interface DeferredTimers {
  count: number;
  lastInMs: number;
  firedAgoMs: number | null;
}

/** The global's key (a registered symbol: not enumerable, clashes with nothing). In-page code repeats it. */
export const TIMER_WATCH_KEY = "warc-crawler.autoscroll.timers";

/**
 * Evaluated in each new document (puppeteer serializes it): self-contained, no outer names. Wraps
 * setTimeout/setInterval/clearTimeout/clearInterval of the frame's global, IntersectionObserver (its
 * callback, observe, unobserve, disconnect), fetch, XMLHttpRequest's open and send, and sendBeacon; every
 * call goes on to the browser's own, with the same arguments, `this` and return value.
 */
export function timerWatchInPage(key: string, shortMs: number, chainMs: number, watchingClockMs: number, deferredMs: readonly [number, number]): void {
  type SetTimeout = (handler: unknown, delay?: number, ...args: unknown[]) => number;
  type ClearTimer = (id?: number) => void;
  interface TimerGlobal {
    setTimeout: SetTimeout;
    setInterval: SetTimeout;
    clearTimeout: ClearTimer;
    clearInterval: ClearTimer;
    IntersectionObserver?: typeof IntersectionObserver;
    addEventListener: typeof addEventListener;
    fetch?: typeof fetch;
    XMLHttpRequest?: typeof XMLHttpRequest;
    navigator?: Navigator;
  }
  const symbol = Symbol.for(key);
  const global = self as unknown as TimerGlobal & Record<symbol, unknown>;
  if (global[symbol]) return;
  const nativeSet = global.setTimeout;
  const nativeClear = global.clearTimeout;
  const nativeClearInterval = global.clearInterval;
  const pending = new Set<number>();
  const deferred = new Map<number, { due: number }>();
  let deferredFiredAt: number | null = null;
  const reactionTimers = new Set<number>();
  let reactionCount = 0;
  // When the reaction the running code belongs to began (null: none), and the scroll event's, if one is being
  // dispatched: its listeners and the animation frames they ask for run in the task that dispatches it.
  let reaction: number | null = null;
  let scrolling: number | null = null;
  let lastScroll = 0;
  // Whether the running code is a clock's: an interval's handler, or a timeout's not set in reaction.
  let clock = false;
  // Runs `act` as a reaction begun at `origin`, or (origin null) as a clock's code.
  const runAs = <T>(origin: number | null, act: () => T): T => {
    const [outer, outerClock] = [reaction, clock];
    [reaction, clock] = [origin, origin === null];
    try {
      return act();
    } finally {
      [reaction, clock] = [outer, outerClock];
    }
  };
  const within = <T>(origin: number, act: () => T): T => runAs(origin, act);
  const ticking = <T>(act: () => T): T => runAs(null, act);
  // A clock's code is no reaction, even while a scroll event is being handled (a hidden tab's timers run late).
  const reacting = () => {
    if (clock) return null;
    const origin = reaction ?? scrolling;
    return origin !== null && Date.now() - origin < chainMs ? origin : null;
  };
  // Capturing at the window, added before any of the page's: first to see every scroll event, of the
  // document and of each element.
  global.addEventListener(
    "scroll",
    () => {
      lastScroll = Date.now();
      if (scrolling !== null) return;
      scrolling = Date.now();
      nativeSet.call(global, () => (scrolling = null), 0);
    },
    { capture: true, passive: true },
  );
  // Proxies of the browser's own functions: to the page they still are them (name, length, and
  // Function.prototype.toString's "[native code]", which bot-detection scripts look at).
  global.setTimeout = new Proxy(nativeSet, {
    apply(target, thisArg, [handler, delay, ...args]: unknown[]) {
      // A string handler (eval'd): passed on as it is, not watched.
      if (typeof handler !== "function") return Reflect.apply(target, thisArg, [handler, delay, ...args]);
      const origin = reacting();
      const reacts = origin !== null;
      // A long delay is no pending work, but its handler is a clock's unless set in reaction.
      const short = Number(delay ?? 0) <= shortMs;
      const fire = function (this: unknown) {
        pending.delete(id);
        reactionTimers.delete(id);
        if (deferred.delete(id)) deferredFiredAt = Date.now();
        const run = () => (handler as (...a: unknown[]) => unknown).apply(this, args);
        return origin !== null ? within(origin, run) : ticking(run);
      };
      const id: number = Reflect.apply(target, thisArg, [fire, delay]);
      // Work the page put off once it had loaded (its load handlers, a promise it waited on then), not by a clock
      // or in reaction to a move; one set while it was still loading is its scripts' own pacing or a watchdog.
      const afterLoad = !reacts && !clock && document.readyState === "complete";
      if (afterLoad && Number(delay) >= deferredMs[0] && Number(delay) <= deferredMs[1] && deferred.size < 100) deferred.set(id, { due: Date.now() + Number(delay) });
      if (!short) return id;
      pending.add(id);
      if (reacts) {
        reactionTimers.add(id);
        reactionCount += 1;
      }
      return id;
    },
  });
  const forgetting = (native: ClearTimer): ClearTimer =>
    new Proxy(native, {
      apply(target, thisArg, args: unknown[]) {
        if (args[0] !== undefined) {
          pending.delete(args[0] as number);
          reactionTimers.delete(args[0] as number);
          shortClocks.delete(args[0] as number);
          deferred.delete(args[0] as number);
        }
        return Reflect.apply(target, thisArg, args);
      },
    });
  // An interval is a clock whoever set it. Short ones: when each last fired.
  const shortClocks = new Map<number, number>();
  global.setInterval = new Proxy(global.setInterval, {
    apply(target, thisArg, [handler, delay, ...args]: unknown[]) {
      if (typeof handler !== "function") return Reflect.apply(target, thisArg, [handler, delay, ...args]);
      const watching = Number(delay ?? 0) <= watchingClockMs;
      const id: number = Reflect.apply(target, thisArg, [
        function (this: unknown) {
          if (watching) shortClocks.set(id, Date.now());
          return ticking(() => (handler as (...a: unknown[]) => unknown).apply(this, args));
        },
        delay,
      ]);
      if (watching) shortClocks.set(id, Date.now());
      return id;
    },
  });
  global.clearTimeout = forgetting(nativeClear);
  global.clearInterval = forgetting(nativeClearInterval);
  // What IntersectionObservers watch: the lazy images and sentinels a scroll has to bring into view.
  const observed = new Map<IntersectionObserver, Set<Element>>();
  const NativeObserver = global.IntersectionObserver;
  if (NativeObserver) {
    global.IntersectionObserver = new Proxy(NativeObserver, {
      construct(target, [callback, ...rest]: unknown[], newTarget) {
        const reacting =
          typeof callback === "function"
            ? function (this: unknown, ...args: unknown[]) {
                return within(Date.now(), () => (callback as (...a: unknown[]) => unknown).apply(this, args));
              }
            : callback;
        return Reflect.construct(target, [reacting, ...rest], newTarget) as object;
      },
    });
    const proto = NativeObserver.prototype;
    const tracking = <K extends "observe" | "unobserve" | "disconnect">(name: K, note: (observer: IntersectionObserver, target: unknown) => void) => {
      proto[name] = new Proxy(proto[name], {
        apply(target, thisArg: IntersectionObserver, args: unknown[]) {
          const answer = Reflect.apply(target, thisArg, args);
          note(thisArg, args[0]);
          return answer;
        },
      }) as IntersectionObserver[K];
    };
    tracking("observe", (observer, target) => {
      if (!(target instanceof Element)) return;
      const targets = observed.get(observer) ?? new Set<Element>();
      observed.set(observer, targets.add(target));
    });
    tracking("unobserve", (observer, target) => observed.get(observer)?.delete(target as Element));
    tracking("disconnect", (observer) => observed.delete(observer));
  }
  // Who asks for what: per path, the requests a clock made, and whether any was made in reaction.
  const clockRequests = new Map<string, { last: number; at: number; unscrolledRepeats: number }>();
  // Where the window is scrolled to: a scroll whose event the browser has not dispatched yet (a busy or hidden
  // tab renders late) has moved it all the same.
  const scrolledTo = () => (document.scrollingElement ?? document.documentElement)?.scrollTop ?? 0;
  const reactedPaths = new Set<string>();
  const requested = (url: unknown) => {
    try {
      const origin = reacting();
      if (origin === null && !clock) return;
      const target = new URL(url instanceof Request ? url.url : String(url), location.href);
      const path = target.origin + target.pathname;
      if (origin !== null) {
        reactedPaths.add(path);
        reactionCount += 1;
      } else {
        const seen = clockRequests.get(path);
        if (seen) {
          const at = scrolledTo();
          if (lastScroll < seen.last && at === seen.at) seen.unscrolledRepeats += 1;
          seen.last = Date.now();
          seen.at = at;
        } else if (clockRequests.size < 500) {
          clockRequests.set(path, { last: Date.now(), at: scrolledTo(), unscrolledRepeats: 0 });
        }
      }
    } catch {
      // Not a URL the browser would fetch either: it fails in the page as it would have.
    }
  };
  const noting = <F extends (...args: never[]) => unknown>(native: F, urlOf: (thisArg: unknown, args: unknown[]) => unknown): F =>
    new Proxy(native, {
      apply(target, thisArg, args: unknown[]) {
        requested(urlOf(thisArg, args));
        return Reflect.apply(target, thisArg, args);
      },
    });
  if (global.fetch) global.fetch = noting(global.fetch, (_, args) => args[0]);
  const navigatorProto = global.navigator ? Object.getPrototypeOf(global.navigator) as Navigator : null;
  if (navigatorProto?.sendBeacon) navigatorProto.sendBeacon = noting(navigatorProto.sendBeacon, (_, args) => args[0]);
  const xhrProto = global.XMLHttpRequest?.prototype;
  if (xhrProto) {
    const opened = new WeakMap<object, unknown>();
    xhrProto.open = new Proxy(xhrProto.open, {
      apply(target, thisArg: object, args: unknown[]) {
        opened.set(thisArg, args[1]);
        return Reflect.apply(target, thisArg, args);
      },
    });
    xhrProto.send = noting(xhrProto.send, (thisArg) => opened.get(thisArg as object));
  }
  const watch = {
    pending: () => pending.size,
    clocksFiredSince: (since: number) => [...shortClocks.values()].every((fired) => fired >= since),
    clocked: () => [...clockRequests.keys()].filter((path) => !reactedPaths.has(path)),
    background: () => [...clockRequests].filter(([path, { unscrolledRepeats }]) => unscrolledRepeats > 0 && !reactedPaths.has(path)).map(([path]) => path),
    reactionsPending: () => reactionTimers.size,
    deferredDue(withinMs: number) {
      const now = Date.now();
      const due = [...deferred.values()].map((timer) => timer.due - now).filter((inMs) => inMs <= withinMs);
      return { count: due.length, lastInMs: Math.max(0, ...due), firedAgoMs: deferredFiredAt === null ? null : now - deferredFiredAt };
    },
    reactions: () => reactionCount,
    react: <T>(act: () => T): T => within(Date.now(), act),
    targets: () =>
      [...observed].flatMap(([observer, targets]) => [...targets].filter((target) => target.isConnected).map((target) => ({ target, observer, root: observer.root }))),
    setTimeout: (handler: () => void, ms: number, ...args: unknown[]) => nativeSet.call(global, handler, ms, ...args),
    clearTimeout: (id?: number) => nativeClear.call(global, id),
  };
  Object.defineProperty(global, symbol, { value: watch });
}

/** In a frame (puppeteer serializes it): the page's deferred timeouts due within `withinMs` (PageTimerWatch.deferredDue). */
export function deferredTimersInPage(key: string, withinMs: number): DeferredTimers {
  const watch = (self as unknown as Record<symbol, PageTimerWatch | undefined>)[Symbol.for(key)];
  return watch ? watch.deferredDue(withinMs) : { count: 0, lastInMs: 0, firedAgoMs: null };
}

/** The script installing the watch, for Page.evaluateOnNewDocument. */
export function timerWatchScript(): string {
  return namedScript(`(${timerWatchInPage.toString()})(${JSON.stringify(TIMER_WATCH_KEY)}, ${SHORT_TIMEOUT_MS}, ${REACTION_CHAIN_MS}, ${WATCHING_CLOCK_MS}, ${JSON.stringify(DEFERRED_TIMEOUT_MS)});`, IN_PAGE_SCRIPT_NAMES.pageWatch);
}

/**
 * A script whose bare `setTimeout`/`clearTimeout` calls go to the browser's own timers, not the watched
 * ones: browsertrix-behaviors (one function expression; its autoplay polls every 500 ms for the page's
 * life, and its waits are no reaction of the page to the scrolling).
 */
export function withUnwatchedTimers(script: string): string {
  const watch = `self[Symbol.for(${JSON.stringify(TIMER_WATCH_KEY)})]`;
  return `(function (setTimeout, clearTimeout) {\n${script}\n}).call(self, ${watch} ? ${watch}.setTimeout : self.setTimeout, ${watch} ? ${watch}.clearTimeout : self.clearTimeout);`;
}
