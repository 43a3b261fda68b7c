import { describe, expect, it } from "vitest";
import { RecentlyUsed } from "../../../src/util/recentlyUsed.js";

describe("RecentlyUsed", () => {
  it("keeps at most its limit, dropping the least recently read or written first", () => {
    const map = new RecentlyUsed<string, number>(3);
    map.set("a", 1);
    map.set("b", 2);
    map.set("c", 3);
    expect(map.get("a")).toBe(1); // a is now the most recent: b goes next
    map.set("d", 4);
    expect([map.get("b"), map.get("c"), map.get("a"), map.get("d"), map.size]).toEqual([undefined, 3, 1, 4, 3]);
    map.set("c", 30); // written again: the most recent
    map.set("e", 5);
    expect([map.get("a"), map.get("c"), map.get("d"), map.get("e")]).toEqual([undefined, 30, 4, 5]);
    map.delete("d");
    expect([map.get("d"), map.size]).toEqual([undefined, 2]);
  });
});
