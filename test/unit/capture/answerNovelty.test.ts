import { describe, expect, it } from "vitest";
import { AnswerNovelty } from "../../../src/capture/answerNovelty.js";

const bytes = (text: string) => Buffer.from(text, "utf8");

describe("AnswerNovelty", () => {
  it("tells an answer whose bytes the page got before (under any URL) from a new one", () => {
    const answers = new AnswerNovelty();
    const start = Date.now();
    answers.note("http://a.test/feed?page=1", "Fetch", bytes("[1,2,3]"));
    answers.note("http://a.test/feed?page=2", "XHR", bytes("[1,2,3]"));
    answers.note("http://a.test/feed?page=3", "Fetch", bytes("[4,5,6]"));
    answers.note("http://a.test/feed?page=1", "Script", bytes("[4,5,6]"));
    expect(answers.since(start)).toEqual([
      { url: "http://a.test/feed?page=1", at: expect.any(Number), novel: true },
      { url: "http://a.test/feed?page=2", at: expect.any(Number), novel: false },
      { url: "http://a.test/feed?page=3", at: expect.any(Number), novel: true },
      { url: "http://a.test/feed?page=1", at: expect.any(Number), novel: false },
    ]);
  });

  it("notes only what scripts fetch, not documents, images or stylesheets", () => {
    const answers = new AnswerNovelty();
    for (const type of ["Document", "Image", "Stylesheet", "Media", "Font"]) answers.note(`http://a.test/${type}`, type, bytes("x"));
    expect(answers.since(0)).toEqual([]);
    answers.note("http://a.test/x", "EventSource", bytes("x"));
    expect(answers.since(0).map((a) => a.novel)).toEqual([true]);
  });

  it("gives only the answers noted at or after the moment asked", async () => {
    const answers = new AnswerNovelty();
    answers.note("http://a.test/1", "Fetch", bytes("1"));
    await new Promise((resolve) => setTimeout(resolve, 5));
    const step = Date.now();
    answers.note("http://a.test/2", "Fetch", bytes("1"));
    expect(answers.since(step).map((a) => [a.url, a.novel])).toEqual([["http://a.test/2", false]]);
  });
});
