import type { Protocol } from "puppeteer-core";
import { describe, expect, it } from "vitest";
import { EarlierAttempts, type StoredAnswer } from "../../../../src/capture/requests/earlierAttempts.js";

const answer = (offset: number, size = 100): StoredAnswer => ({ path: "/archive/a.warc.gz", offset, length: 50, wacz: "a.wacz", size });
const request = (url: string, method = "GET", headers: Record<string, string> = {}) => ({ url, method, headers }) as Protocol.Network.Request;

describe("what a page's attempts stored, kept for its retries", () => {
  it("answers a GET of a whole success an attempt stored, nothing else", () => {
    const stores = new EarlierAttempts().of("http://a.test/");
    stores.remember("http://a.test/img.png", 200, answer(10));
    stores.remember("http://a.test/gone", 404, answer(20));
    stores.remember("http://a.test/moved", 301, answer(30));
    stores.remember("http://a.test/huge.mp4", 200, answer(40, 64 * 1024 * 1024));
    expect(stores.answerFor(request("http://a.test/img.png"))).toEqual(answer(10));
    expect(stores.answerFor(request("http://a.test/img.png", "HEAD"))).toBeNull();
    expect(stores.answerFor(request("http://a.test/img.png", "GET", { Range: "bytes=0-" }))).toBeNull();
    expect(stores.answerFor(request("http://a.test/gone"))).toBeNull();
    expect(stores.answerFor(request("http://a.test/moved"))).toBeNull();
    expect(stores.answerFor(request("http://a.test/huge.mp4"))).toBeNull();
    expect(stores.answerFor(request("http://a.test/never"))).toBeNull();
    expect(stores.size).toBe(2);
  });

  it("keeps a page's records from one attempt to the next until it is forgotten", () => {
    const attempts = new EarlierAttempts();
    attempts.of("http://a.test/").remember("http://a.test/app.js", 200, answer(1));
    expect(attempts.of("http://a.test/").answerFor(request("http://a.test/app.js"))).toEqual(answer(1));
    expect(attempts.of("http://b.test/").answerFor(request("http://a.test/app.js"))).toBeNull();
    attempts.forget("http://a.test/");
    expect(attempts.of("http://a.test/").size).toBe(0);
  });

  it("is bounded: 256 pages (the least recently attempted goes), 5000 URLs a page", () => {
    const attempts = new EarlierAttempts();
    attempts.of("http://page/0").remember("http://x/0", 200, answer(0));
    for (let i = 1; i <= 256; i++) attempts.of(`http://page/${i}`).remember(`http://x/${i}`, 200, answer(i));
    expect(attempts.size).toBe(256);
    expect(attempts.of("http://page/0").size).toBe(0);
    expect(attempts.of("http://page/256").size).toBe(1);

    const stores = attempts.of("http://big/");
    for (let i = 0; i < 5001; i++) stores.remember(`http://big/${i}`, 200, answer(i));
    expect(stores.size).toBe(5000);
    expect(stores.answerFor(request("http://big/5000"))).toBeNull();
    stores.remember("http://big/0", 200, answer(7));
    expect(stores.answerFor(request("http://big/0"))).toEqual(answer(7));
  });
});
