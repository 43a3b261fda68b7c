/**
 * The autoscroll's view of a page's pending timers: a feed whose trigger is debounced (a scroll listener
 * that fetches 300 ms after the scrolling stops) asks for its next batch with nothing in flight and
 * nothing grown for that long. Knowing that such a timer is pending, the autoscroll waits for it; knowing
 * that none is, it need not wait the quiet time out on a page where nothing happens (most pages).
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

/** What the watch leaves in the page, under Symbol.for(TIMER_WATCH_KEY) of the frame's global. */
export interface PageTimerWatch {
  /** Short timeouts scheduled and neither fired nor cleared. */
  pending(): number;
  /** The browser's own setTimeout/clearTimeout: the autoscroll's and the library's waits are not the page's work. */
  setTimeout(handler: () => void, ms: number, ...args: unknown[]): number;
  clearTimeout(id?: number): void;
}

/** The global's key (a registered symbol: not enumerable, clashes with nothing). In-page code repeats it. */
export const TIMER_WATCH_KEY = "warc-crawler.autoscroll.timers";

/**
 * Evaluated in each new document (puppeteer serializes it): self-contained, no outer names. Wraps
 * setTimeout/clearTimeout (and clearInterval: it clears timeouts too) of the frame's global; every call
 * goes on to the browser's own, with the same arguments, `this` and return value.
 */
export function timerWatchInPage(key: string, shortMs: number): void {
  type SetTimeout = (handler: unknown, delay?: number, ...args: unknown[]) => number;
  type ClearTimer = (id?: number) => void;
  interface TimerGlobal {
    setTimeout: SetTimeout;
    clearTimeout: ClearTimer;
    clearInterval: ClearTimer;
  }
  const symbol = Symbol.for(key);
  const global = self as unknown as TimerGlobal & Record<symbol, unknown>;
  if (global[symbol]) return;
  const nativeSet = global.setTimeout;
  const nativeClear = global.clearTimeout;
  const nativeClearInterval = global.clearInterval;
  const pending = new Set<number>();
  // Proxies of the browser's own functions: to the page they still are them (name, length, and
  // Function.prototype.toString's "[native code]", which bot-detection scripts look at).
  global.setTimeout = new Proxy(nativeSet, {
    apply(target, thisArg, [handler, delay, ...args]: unknown[]) {
      // A string handler (eval'd) or a long delay: passed on as it is, not watched.
      if (typeof handler !== "function" || !(Number(delay ?? 0) <= shortMs)) return Reflect.apply(target, thisArg, [handler, delay, ...args]);
      const id: number = Reflect.apply(target, thisArg, [
        function (this: unknown) {
          pending.delete(id);
          return (handler as (...a: unknown[]) => unknown).apply(this, args);
        },
        delay,
      ]);
      pending.add(id);
      return id;
    },
  });
  const forgetting = (native: ClearTimer): ClearTimer =>
    new Proxy(native, {
      apply(target, thisArg, args: unknown[]) {
        if (args[0] !== undefined) pending.delete(args[0] as number);
        return Reflect.apply(target, thisArg, args);
      },
    });
  global.clearTimeout = forgetting(nativeClear);
  global.clearInterval = forgetting(nativeClearInterval);
  const watch = {
    pending: () => pending.size,
    setTimeout: (handler: () => void, ms: number, ...args: unknown[]) => nativeSet.call(global, handler, ms, ...args),
    clearTimeout: (id?: number) => nativeClear.call(global, id),
  };
  Object.defineProperty(global, symbol, { value: watch });
}

/** The script installing the watch, for Page.evaluateOnNewDocument. */
export function timerWatchScript(): string {
  return `(${timerWatchInPage.toString()})(${JSON.stringify(TIMER_WATCH_KEY)}, ${SHORT_TIMEOUT_MS});`;
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
