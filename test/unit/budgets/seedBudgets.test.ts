import { describe, expect, it } from "vitest";
import { crawlStateKeys } from "../../../src/state/stateKeys.js";
import { ExtraSeeds } from "../../../src/frontier/extraSeeds.js";
import { SeedBudgets, type SeedBudget } from "../../../src/budgets/seedBudgets.js";
import { usePrivateRedis } from "../../helpers/redis.js";

// The budgets' scripts on a real redis-server: what two processes of one crawl see of each other's slots.
const redis = usePrivateRedis();
const keys = crawlStateKeys("budgets");
const budgetsOf = (owner: string, seeds: SeedBudget[], hostLimit = 0) => new SeedBudgets(redis.client, keys, owner, seeds, hostLimit);
const page = (n: number, seedId = 0, origin = "http://127.0.0.1:8001") => ({ url: `${origin}/page/${n}.html`, seedId });

describe("seed budgets in Redis", () => {
  it("two processes starting 20 pages of a 5-page budget at once: exactly 5 start", async () => {
    const [one, two] = [budgetsOf("p1", [{ pages: 5, bytes: 0 }]), budgetsOf("p2", [{ pages: 5, bytes: 0 }])];
    const answers = await Promise.all(Array.from({ length: 20 }, (_, n) => (n % 2 ? one : two).reserve(page(n))));
    expect(answers.filter((a) => a === null)).toHaveLength(5);
    expect(answers.filter((a) => a === "seedPageLimit")).toHaveLength(15);
    expect(await one.refusals([page(99)])).toEqual(["seedPageLimit"]);
    // A started page that fails gives its slot back: one more may start; a crawled one keeps it.
    const started = answers.flatMap((a, n) => (a === null ? [n] : []));
    await (started[0] % 2 ? one : two).release(page(started[0]), 100);
    await (started[1] % 2 ? one : two).finished(page(started[1]), 1000);
    expect(await one.refusals([page(99)])).toEqual([null]);
    expect(await two.reserve(page(21))).toBeNull();
    expect(await one.reserve(page(22))).toBe("seedPageLimit");
    expect(await one.tallies()).toEqual([{ pages: 1, bytes: 1100, budgetEnd: "pageLimit" }]);
  });

  it("a size budget refuses pages once the seed's bytes reach it; the host cap counts every seed's pages", async () => {
    const budgets = budgetsOf("p1", [{ pages: 0, bytes: 5000 }, { pages: 0, bytes: 0 }], 3);
    expect(await budgets.reserve(page(0))).toBeNull();
    await budgets.finished(page(0), 4999);
    expect(await budgets.refusals([page(1), page(1, 1, "http://127.0.0.1:8002")])).toEqual([null, null]);
    expect(await budgets.reserve(page(1))).toBeNull();
    await budgets.finished(page(1), 1);
    expect(await budgets.refusals([page(2), page(2, 1, "http://127.0.0.1:8002")])).toEqual(["seedSizeLimit", null]);
    // Seed 1's pages on seed 0's host fill its cap of 3 with seed 0's two.
    expect(await budgets.reserve(page(3, 1))).toBeNull();
    expect(await budgets.reserve(page(4, 1))).toBe("hostPageLimit");
    expect(await budgets.reserve(page(4, 1, "http://127.0.0.1:8002"))).toBeNull();
    expect((await budgets.tallies()).map((t) => t.budgetEnd)).toEqual(["sizeLimit", null]);
  });

  it("bytes written for a page after it was settled are its seed's, and may spend its size budget", async () => {
    const budgets = budgetsOf("p1", [{ pages: 0, bytes: 5000 }, { pages: 0, bytes: 0 }]);
    expect(await budgets.reserve(page(0))).toBeNull();
    await budgets.finished(page(0), 3000);
    await budgets.addBytes(page(0), 1500);
    await budgets.addBytes(page(7, 1), 10);
    expect(await budgets.tallies()).toEqual([{ pages: 1, bytes: 4500, budgetEnd: null }, { pages: 0, bytes: 10, budgetEnd: null }]);
    await budgets.addBytes(page(0), 500);
    expect(await budgets.refusals([page(1)])).toEqual(["seedSizeLimit"]);
    expect((await budgets.tallies())[0]).toEqual({ pages: 1, bytes: 5000, budgetEnd: "sizeLimit" });
  });

  it("the slots of a process taken for dead (fenced) no longer count; an extra seed spends its original's budget", async () => {
    const dead = budgetsOf("dead", [{ pages: 2, bytes: 0 }, { pages: 0, bytes: 0 }]);
    const alive = budgetsOf("alive", [{ pages: 2, bytes: 0 }, { pages: 0, bytes: 0 }]);
    expect(await dead.reserve(page(0))).toBeNull();
    expect(await dead.reserve(page(1))).toBeNull();
    expect(await alive.reserve(page(2))).toBe("seedPageLimit");
    await redis.client.sadd(keys.fenced, "dead");
    expect(await alive.reserve(page(2))).toBeNull();
    expect(await redis.client.hkeys(keys.budgetSlots)).toEqual([page(2).url]);
    // Seed 2 is the first extra seed, added at seed 0's redirect target.
    await new ExtraSeeds(redis.client, keys).add({ origSeedId: 0, url: "http://127.0.0.1:8003/" });
    expect(await alive.rootOf(2)).toBe(0);
    await alive.finished(page(2), 10);
    expect(await alive.reserve(page(0, 2, "http://127.0.0.1:8003"))).toBeNull();
    expect(await alive.reserve(page(1, 2, "http://127.0.0.1:8003"))).toBe("seedPageLimit");
  });
});
