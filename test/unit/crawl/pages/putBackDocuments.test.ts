// A page put back to wait for its template keeps its fetched document for its retry, within bounds; what is not
// taken in time is dropped (its body file deleted).
import { describe, expect, it } from "vitest";
import { PutBackDocuments } from "../../../../src/crawl/pages/putBackDocuments.js";
import type { StaticDocument } from "../../../../src/page/staticPage.js";

function doc(url: string, chars: number): StaticDocument {
  return { url, exchange: {} as StaticDocument["exchange"], notStatic: null, parsed: { html: "x".repeat(chars) } as NonNullable<StaticDocument["parsed"]> };
}

function book(limits = { count: 3, chars: 100, maxAgeMs: 1000 }) {
  const dropped: string[] = [];
  let now = 0;
  const kept = new PutBackDocuments(async (d) => void dropped.push(d.url), limits, () => now);
  return { kept, dropped, advance: (ms: number) => (now += ms) };
}

describe("PutBackDocuments", () => {
  it("hands a page's document to its retry once", () => {
    const { kept, dropped } = book();
    const a = doc("http://site.test/a", 10);
    kept.keep(a.url, a);
    expect(kept.take("http://site.test/b")).toBeNull();
    expect(kept.take(a.url)).toBe(a);
    expect(kept.take(a.url)).toBeNull();
    expect(dropped).toEqual([]);
  });

  it("drops the oldest past the count or the characters kept, and one too large to keep at all", () => {
    const { kept, dropped } = book();
    for (const name of ["a", "b", "c", "d"]) kept.keep(`http://site.test/${name}`, doc(`http://site.test/${name}`, 10));
    expect(dropped).toEqual(["http://site.test/a"]);
    kept.keep("http://site.test/e", doc("http://site.test/e", 80));
    expect(dropped).toEqual(["http://site.test/a", "http://site.test/b"]); // c, d and e: 100 characters
    kept.keep("http://site.test/f", doc("http://site.test/f", 1));
    expect(dropped).toEqual(["http://site.test/a", "http://site.test/b", "http://site.test/c"]);
    kept.take("http://site.test/f");
    kept.keep("http://site.test/huge", doc("http://site.test/huge", 101));
    expect(dropped.at(-1)).toBe("http://site.test/huge");
    expect(kept.take("http://site.test/d")?.url).toBe("http://site.test/d");
    expect(kept.take("http://site.test/e")?.url).toBe("http://site.test/e");
  });

  it("fetches again what waited too long: the old document is dropped", () => {
    const { kept, dropped, advance } = book();
    kept.keep("http://site.test/a", doc("http://site.test/a", 10));
    advance(500);
    kept.keep("http://site.test/b", doc("http://site.test/b", 10));
    advance(600);
    expect(kept.take("http://site.test/a")).toBeNull();
    expect(dropped).toEqual(["http://site.test/a"]);
    // Keeping another drops what aged meanwhile.
    advance(600);
    kept.keep("http://site.test/c", doc("http://site.test/c", 10));
    expect(dropped).toEqual(["http://site.test/a", "http://site.test/b"]);
  });

  it("a page put back again replaces its document; clear drops all", async () => {
    const { kept, dropped } = book();
    kept.keep("http://site.test/a", doc("http://site.test/a", 10));
    kept.keep("http://site.test/a", doc("http://site.test/a", 20));
    expect(dropped).toEqual(["http://site.test/a"]);
    kept.keep("http://site.test/b", doc("http://site.test/b", 10));
    await kept.clear();
    expect(dropped).toEqual(["http://site.test/a", "http://site.test/a", "http://site.test/b"]);
    expect(kept.size).toBe(0);
  });
});
