/**
 * Requests the browser dropped while their response was paused with us (Network.loadingFailed: a fetch the
 * page aborted, an image or a frame removed mid-body). Chromium never answers a Fetch.getResponseBody that is
 * waiting for such a body (it would wait out the protocol timeout, two minutes), so each read is raced
 * against its request's drop.
 */
export class DroppedRequests {
  /** Network ids dropped so far, with the browser's error text. */
  private readonly dropped = new Map<string, string>();
  private readonly waiting = new Map<string, Set<(error: string) => void>>();

  /** The browser dropped the request `networkId` (its error text, e.g. net::ERR_ABORTED). */
  drop(networkId: string, error: string): void {
    this.dropped.set(networkId, error);
    for (const wake of this.waiting.get(networkId) ?? []) wake(error);
    this.waiting.delete(networkId);
  }

  /**
   * `work` (a read of `networkId`'s body), or a rejection as soon as the browser drops that request: then the
   * read is left pending in the browser and its answer, if one ever comes, ignored.
   */
  async unlessDropped<T>(networkId: string | null, work: Promise<T>): Promise<T> {
    if (networkId === null) return work;
    const already = this.dropped.get(networkId);
    let wake: ((error: string) => void) | undefined;
    const drop = already !== undefined ? Promise.resolve(already) : new Promise<string>((resolve) => {
      wake = resolve;
      const set = this.waiting.get(networkId) ?? new Set();
      set.add(resolve);
      this.waiting.set(networkId, set);
    });
    try {
      return await Promise.race([work, drop.then((error): never => {
        throw new RequestDroppedError(error);
      })]);
    } finally {
      if (wake) {
        const set = this.waiting.get(networkId);
        set?.delete(wake);
        if (set?.size === 0) this.waiting.delete(networkId);
      }
    }
  }
}

/** The browser dropped the request whose body was being read. */
export class RequestDroppedError extends Error {
  constructor(readonly browserError: string) {
    super(`the browser dropped the request while its body was read (${browserError})`);
  }
}
