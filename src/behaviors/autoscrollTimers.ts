/**
 * The autoscroll's view of how a page reacts to being scrolled: a feed whose trigger is debounced (a scroll
 * listener that fetches 300 ms after the scrolling stops) asks for its next batch with nothing in flight and
 * nothing grown for that long. Knowing that such a timer is pending, the autoscroll waits for it; knowing
 * that none is, it need not wait on a page where nothing happens (most pages), whatever clocks and
 * animations that page runs: only timeouts set in reaction to a scroll or a click are waited for. And which
 * elements IntersectionObservers watch (lazy images, a feed's sentinel): the places a scroll has to show,
 * so that it need not walk a long page a viewport at a time.
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

/** A reaction's timers keep counting as one for this long after our move or click (a debounce that re-arms). */
export const REACTION_CHAIN_MS = 2000;

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
  /** Run `act` (our click) as a reaction: what its handlers start counts. */
  react<T>(act: () => T): T;
  /** The elements IntersectionObservers watch now, with each one's observer and its root (null: the viewport). */
  targets(): { target: Element; observer: IntersectionObserver; root: Element | Document | null }[];
  /** The browser's own setTimeout/clearTimeout: the autoscroll's and the library's waits are not the page's work. */
  setTimeout(handler: () => void, ms: number, ...args: unknown[]): number;
  clearTimeout(id?: number): void;
}

/** The global's key (a registered symbol: not enumerable, clashes with nothing). In-page code repeats it. */
export const TIMER_WATCH_KEY = "warc-crawler.autoscroll.timers";

/**
 * Evaluated in each new document (puppeteer serializes it): self-contained, no outer names. Wraps
 * setTimeout/clearTimeout (and clearInterval: it clears timeouts too) of the frame's global, and
 * IntersectionObserver (its callback, observe, unobserve, disconnect); every call goes on to the browser's
 * own, with the same arguments, `this` and return value.
 */
export function timerWatchInPage(key: string, shortMs: number, chainMs: number): void {
  type SetTimeout = (handler: unknown, delay?: number, ...args: unknown[]) => number;
  type ClearTimer = (id?: number) => void;
  interface TimerGlobal {
    setTimeout: SetTimeout;
    clearTimeout: ClearTimer;
    clearInterval: ClearTimer;
    IntersectionObserver?: typeof IntersectionObserver;
    addEventListener: typeof addEventListener;
  }
  const symbol = Symbol.for(key);
  const global = self as unknown as TimerGlobal & Record<symbol, unknown>;
  if (global[symbol]) return;
  const nativeSet = global.setTimeout;
  const nativeClear = global.clearTimeout;
  const nativeClearInterval = global.clearInterval;
  const pending = new Set<number>();
  const reactionTimers = new Set<number>();
  let reactionCount = 0;
  // When the reaction the running code belongs to began (null: none), and the scroll event's, if one is being
  // dispatched: its listeners and the animation frames they ask for run in the task that dispatches it.
  let reaction: number | null = null;
  let scrolling: number | null = null;
  const within = <T>(origin: number, act: () => T): T => {
    const outer = reaction;
    reaction = origin;
    try {
      return act();
    } finally {
      reaction = outer;
    }
  };
  // Capturing at the window, added before any of the page's: first to see every scroll event, of the
  // document and of each element.
  global.addEventListener(
    "scroll",
    () => {
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
      // A string handler (eval'd) or a long delay: passed on as it is, not watched.
      if (typeof handler !== "function" || !(Number(delay ?? 0) <= shortMs)) return Reflect.apply(target, thisArg, [handler, delay, ...args]);
      const origin = reaction ?? scrolling;
      const reacts = origin !== null && Date.now() - origin < chainMs;
      const id: number = Reflect.apply(target, thisArg, [
        function (this: unknown) {
          pending.delete(id);
          reactionTimers.delete(id);
          const run = () => (handler as (...a: unknown[]) => unknown).apply(this, args);
          return reacts ? within(origin, run) : run();
        },
        delay,
      ]);
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
        }
        return Reflect.apply(target, thisArg, args);
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
  const watch = {
    pending: () => pending.size,
    reactionsPending: () => reactionTimers.size,
    reactions: () => reactionCount,
    react: <T>(act: () => T): T => within(Date.now(), act),
    targets: () =>
      [...observed].flatMap(([observer, targets]) => [...targets].filter((target) => target.isConnected).map((target) => ({ target, observer, root: observer.root }))),
    setTimeout: (handler: () => void, ms: number, ...args: unknown[]) => nativeSet.call(global, handler, ms, ...args),
    clearTimeout: (id?: number) => nativeClear.call(global, id),
  };
  Object.defineProperty(global, symbol, { value: watch });
}

/** The script installing the watch, for Page.evaluateOnNewDocument. */
export function timerWatchScript(): string {
  return `(${timerWatchInPage.toString()})(${JSON.stringify(TIMER_WATCH_KEY)}, ${SHORT_TIMEOUT_MS}, ${REACTION_CHAIN_MS});`;
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
