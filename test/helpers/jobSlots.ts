/**
 * Runs jobs (crawls a file's tests share) at most `slots` at a time, in the order they were queued: a file
 * can queue its crawls in beforeAll and let its tests await their results, so crawls that mostly wait
 * overlap without more of them at once than the machine's cores.
 */
export class JobSlots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly slots = 2) {}

  /** Queue `job`; its promise settles as the job does. A rejected job's promise is also marked handled,
   * so that a failure nobody awaited yet is reported by the test that awaits it, not as an unhandled rejection. */
  run<T>(job: () => Promise<T>): Promise<T> {
    const result = new Promise<T>((resolve, reject) => {
      const start = () => {
        this.running += 1;
        Promise.resolve().then(job).then(resolve, reject).finally(() => {
          this.running -= 1;
          this.waiting.shift()?.();
        });
      };
      if (this.running < this.slots) start();
      else this.waiting.push(start);
    });
    result.catch(() => undefined);
    return result;
  }
}
