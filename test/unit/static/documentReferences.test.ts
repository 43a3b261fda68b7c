import { describe, expect, it } from "vitest";
import { documentReferences } from "../../../src/static/documentReferences.js";
import { EVERY_KIND_HTML, EVERY_KIND_PATH } from "./everyKindPage.js";

const PAGE = `http://127.0.0.1:8080${EVERY_KIND_PATH}`;
const HTML = EVERY_KIND_HTML;

describe("documentReferences", () => {
  const A = "http://127.0.0.1:8080/site/assets/";

  it("names every requisite a browser fetches, against the first <base href>, each once, in document order", () => {
    const found = documentReferences(HTML, PAGE);
    expect(found.baseUrl).toBe(A);
    expect(found.requisites).toEqual([
      { url: `${A}main.css`, kind: "stylesheet", from: "link stylesheet" },
      { url: `${A}alt.css`, kind: "stylesheet", from: "link stylesheet" },
      { url: `${A}favicon.png`, kind: "icon", from: "link icon" },
      { url: `${A}favicon.ico`, kind: "icon", from: "link shortcut icon" },
      { url: `${A}touch.png`, kind: "icon", from: "link apple-touch-icon" },
      { url: `${A}app.webmanifest`, kind: "manifest", from: "link manifest" },
      { url: `${A}font.woff2`, kind: "preload", from: "link preload as=font", cors: true },
      { url: `${A}hero.png`, kind: "preload", from: "link preload as=image" },
      { url: `${A}hero-1x.png`, kind: "preload", from: "link preload imagesrcset" },
      { url: `${A}hero-2x.png`, kind: "preload", from: "link preload imagesrcset" },
      { url: `${A}mod.js`, kind: "preload", from: "link modulepreload", cors: true },
      { url: `${A}next-data.json`, kind: "other", from: "link prefetch" },
      { url: `${A}app.js`, kind: "script", from: "script src" },
      { url: `${A}module.js`, kind: "script", from: "script src", cors: true },
      { url: `${A}classic.js`, kind: "script", from: "script src" },
      { url: `${A}imported.css`, kind: "stylesheet", from: "style @import" },
      { url: `${A}body-bg.png`, kind: "image", from: "style url()" },
      { url: `${A}style-font.woff`, kind: "font", from: "style url()" },
      { url: `${A}old-bg.gif`, kind: "image", from: "body background" },
      { url: `${A}logo.png`, kind: "image", from: "img src" },
      { url: `${A}logo-2x.png`, kind: "image", from: "img srcset" },
      { url: `${A}logo,comma.png`, kind: "image", from: "img srcset" },
      { url: "http://127.0.0.1:8080/abs/logo-w.png", kind: "image", from: "img srcset" },
      { url: `${A}only-srcset.png`, kind: "image", from: "img srcset" },
      { url: `${A}spaced.png`, kind: "image", from: "img src" },
      { url: `${A}pic.avif`, kind: "image", from: "picture source srcset" },
      { url: `${A}pic-2x.avif`, kind: "image", from: "picture source srcset" },
      { url: `${A}pic-wide.webp`, kind: "image", from: "picture source srcset" },
      { url: `${A}pic.jpg`, kind: "image", from: "img src" },
      { url: `${A}movie.mp4`, kind: "media", from: "video src" },
      { url: `${A}poster.jpg`, kind: "image", from: "video poster" },
      { url: `${A}movie.webm`, kind: "media", from: "video source src" },
      { url: `${A}subs.vtt`, kind: "media", from: "track src" },
      { url: `${A}sound.mp3`, kind: "media", from: "audio src" },
      { url: `${A}sound.ogg`, kind: "media", from: "audio source src" },
      { url: `${A}frame.html`, kind: "frame", from: "iframe src" },
      { url: `${A}plugin.swf`, kind: "other", from: "embed src" },
      { url: `${A}object.svg`, kind: "other", from: "object data" },
      { url: `${A}submit.png`, kind: "image", from: "input image src" },
      { url: `${A}inline-style.png`, kind: "image", from: "style attribute url()" },
      { url: `${A}table-bg.png`, kind: "image", from: "table background" },
      { url: `${A}cell-bg.png`, kind: "image", from: "td background" },
      { url: `${A}svg-image.png`, kind: "image", from: "svg image href" },
      { url: `${A}svg-xlink.png`, kind: "image", from: "svg image href" },
      { url: `${A}sprite.svg`, kind: "image", from: "svg use href" },
      { url: `${A}svg-style.png`, kind: "image", from: "svg style url()" },
      { url: "http://cdn.example/protocol-relative.png", kind: "image", from: "img src" },
      { url: "https://other.example/absolute.png", kind: "image", from: "img src" },
    ]);
  });

  it("names the links a browser crawl queues: a and area hrefs as written, fragments kept, then the meta refresh", () => {
    expect(documentReferences(HTML, PAGE).links).toEqual([
      `${A}svg-link.html`,
      `${A}a.html`,
      `${A}a.html#section`,
      `${A}#top`,
      "http://127.0.0.1:8080/root.html?q=1",
      "mailto:x@example.invalid",
      `${A}area.html`,
      `${A}next.html#after`,
    ]);
  });

  it("without a <base>, resolves against the document's URL; an https page's protocol-relative URLs are https", () => {
    const found = documentReferences(`<img src="a.png"><img src="//cdn.example/b.png"><a href="?page=2">next</a><meta http-equiv=refresh content="0;url=/moved">`, "https://site.example/x/y.html?q=1");
    expect(found).toEqual({
      baseUrl: "https://site.example/x/y.html?q=1",
      requisites: [
        { url: "https://site.example/x/a.png", kind: "image", from: "img src" },
        { url: "https://cdn.example/b.png", kind: "image", from: "img src" },
      ],
      links: ["https://site.example/x/y.html?page=2", "https://site.example/moved"],
    });
  });
});

describe("documentReferences on a frameset and on deep nesting", () => {
  it("reads a frameset's frames", () => {
    const html = `<html><head><title>f</title></head><frameset cols="50%,50%"><frame src="left.html"><frame src="right.html#x"><frame src="left.html"></frameset></html>`;
    expect(documentReferences(html, "http://127.0.0.1:8080/f/index.html").requisites).toEqual([
      { url: "http://127.0.0.1:8080/f/left.html", kind: "frame", from: "frame src" },
      { url: "http://127.0.0.1:8080/f/right.html", kind: "frame", from: "frame src" },
    ]);
  });

  it("reads a document nested 5,000 elements deep", () => {
    const html = `${"<div>".repeat(5_000)}<img src="deep.png">${"</div>".repeat(5_000)}`;
    expect(documentReferences(html, "http://127.0.0.1:8080/").requisites).toEqual([{ url: "http://127.0.0.1:8080/deep.png", kind: "image", from: "img src" }]);
  });
});
