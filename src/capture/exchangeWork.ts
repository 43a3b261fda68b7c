/**
 * A tab's capture work under way: the exchanges being captured (with their URLs) and the work running
 * in the background (whole-resource fetches after 206s, sockets written). A page's end waits for it with one deadline.
 */
export class ExchangeWork {
  private readonly exchanges = new Map<Promise<void>, string>();
  private readonly inBackground = new Set<Promise<void>>();

  /** An exchange being captured, until its work settles. */
  exchange(work: Promise<void>, url: string): void {
    this.exchanges.set(work, url);
    void work.finally(() => this.exchanges.delete(work));
  }

  /** Settles once the exchanges being captured now have settled (not those that start later). */
  exchangesSettled(): Promise<unknown> {
    return Promise.allSettled([...this.exchanges.keys()]);
  }

  /** Work in the background: a whole resource fetched after a 206, a page's sockets written at its end. */
  background(work: Promise<void>): void {
    this.inBackground.add(work);
    void work.finally(() => this.inBackground.delete(work));
  }

  /**
   * Wait until no work is under way (what starts meanwhile included: an exchange may start a fetch after a
   * 206), for at most `deadlineMs`; the URLs of the exchanges still under way then (none when all settled).
   * The caller makes sure nothing new starts (a page's end refuses its later requests).
   */
  async settle(deadlineMs: number): Promise<string[]> {
    return (await settledWithin(this.all(), deadlineMs)) ? [] : [...this.exchanges.values()];
  }

  /** What is under way now: the URLs of the exchanges being captured, and how much background work. */
  underWay(): { urls: string[]; background: number } {
    return { urls: [...this.exchanges.values()], background: this.inBackground.size };
  }

  /** Wait for the work under way now (not what starts meanwhile), for at most `deadlineMs`. */
  async settleCurrent(deadlineMs: number): Promise<void> {
    const pending = [...this.exchanges.keys(), ...this.inBackground];
    if (pending.length) await settledWithin(Promise.allSettled(pending), deadlineMs);
  }

  /** Wait until no work is under way, what starts meanwhile included (a closing tab's; the caller bounds it). */
  async all(): Promise<void> {
    while (this.exchanges.size || this.inBackground.size) await Promise.allSettled([...this.exchanges.keys(), ...this.inBackground]);
  }
}

/** Whether `work` settled within `deadlineMs` (it goes on either way). */
async function settledWithin(work: Promise<unknown>, deadlineMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), deadlineMs)));
  const inTime = await Promise.race([work.then(() => true), deadline]);
  clearTimeout(timer);
  return inTime;
}
