// __bx_addLinkBatch's argument as the binding reads it (src/behaviors/behaviors.ts linkBatch).
import { describe, expect, it } from "vitest";
import { linkBatch } from "../../../src/behaviors/behaviors.js";

describe("linkBatch", () => {
  it("splits browsertrix-crawler's form, URLs joined by blank lines, and drops empty parts", () => {
    expect(linkBatch("https://a.test/1\n\nhttps://a.test/2\n\n\n\n/rel?q=1\n\n")).toEqual(["https://a.test/1", "https://a.test/2", "/rel?q=1"]);
  });

  it("takes an array of URL strings, leaving out what is not a string", () => {
    expect(linkBatch(["https://a.test/1", 7, null, "", " https://a.test/2 ", { href: "x" }])).toEqual(["https://a.test/1", "https://a.test/2"]);
  });

  it("gives nothing for anything else", () => {
    expect(linkBatch(undefined)).toEqual([]);
    expect(linkBatch(42)).toEqual([]);
    expect(linkBatch({ urls: ["https://a.test/"] })).toEqual([]);
  });
});
