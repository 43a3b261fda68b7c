import { describe, expect, it } from "vitest";
import { DroppedRequests, RequestDroppedError } from "../../../../src/capture/bodies/droppedRequests.js";

const never = <T>() => new Promise<T>(() => undefined);

describe("DroppedRequests", () => {
  it("gives a read its answer when the request is not dropped", async () => {
    const dropped = new DroppedRequests();
    await expect(dropped.unlessDropped("1.1", Promise.resolve("body"))).resolves.toBe("body");
    await expect(dropped.unlessDropped("1.1", Promise.reject(new Error("Invalid InterceptionId")))).rejects.toThrow("Invalid InterceptionId");
  });

  it("gives up a read that never answers as soon as its request is dropped", async () => {
    const dropped = new DroppedRequests();
    const read = dropped.unlessDropped("7.2", never<string>());
    dropped.drop("7.3", "net::ERR_FAILED"); // another request's drop changes nothing
    dropped.drop("7.2", "net::ERR_ABORTED");
    await expect(read).rejects.toEqual(new RequestDroppedError("net::ERR_ABORTED"));
    await expect(read).rejects.toThrow("the browser dropped the request while its body was read (net::ERR_ABORTED)");
  });

  it("gives up at once a read of a request dropped before it began", async () => {
    const dropped = new DroppedRequests();
    dropped.drop("9", "net::ERR_ABORTED");
    await expect(dropped.unlessDropped("9", never<string>())).rejects.toBeInstanceOf(RequestDroppedError);
  });

  it("waits on a read with no network id (nothing can drop it) and keeps no waiter once a read is over", async () => {
    const dropped = new DroppedRequests();
    await expect(dropped.unlessDropped(null, Promise.resolve(1))).resolves.toBe(1);
    await dropped.unlessDropped("3", Promise.resolve(1));
    expect((dropped as unknown as { waiting: Map<string, unknown> }).waiting.size).toBe(0);
  });
});
