import { describe, expect, it } from "vitest";
import { documentReferences } from "../../../src/static/documentReferences.js";

const PAGE = "http://127.0.0.1:8080/site/dir/page.html";

const HTML = `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Refresh" content="5; URL='next.html#after'">
<base href="../assets/">
<base href="/ignored-second-base/">
<title>Every kind</title>
<link rel="stylesheet" href="main.css">
<link rel="alternate stylesheet" href="alt.css" title="Alt">
<link rel="icon" href="favicon.png">
<link rel="shortcut icon" href="favicon.ico">
<link rel="apple-touch-icon" href="touch.png">
<link rel="manifest" href="app.webmanifest">
<link rel="preload" href="font.woff2" as="font" crossorigin>
<link rel="preload" as="image" href="hero.png" imagesrcset="hero-1x.png 1x, hero-2x.png 2x">
<link rel="modulepreload" href="mod.js">
<link rel="prefetch" href="next-data.json">
<link rel="canonical" href="https://example.com/canonical">
<link rel="alternate" href="feed.xml" type="application/rss+xml">
<link rel="icon" href="data:,">
<script src="app.js"></script>
<script type="module" src="module.js"></script>
<script type="text/javascript" src="classic.js"></script>
<script type="text/template" src="template.html"></script>
<script type="application/ld+json" src="ld.json"></script>
<script>var inline = "url(not-fetched.png)";</script>
<style>
@import "imported.css";
/* url(commented.png) */
body { background: url(body-bg.png) }
@font-face { font-family: F; src: url(style-font.woff) }
</style>
</head>
<body background="old-bg.gif">
<img src="logo.png" srcset="logo-2x.png 2x, logo,comma.png 3x, /abs/logo-w.png 640w" sizes="(max-width: 600px) 100vw, 50vw" alt="">
<img srcset="only-srcset.png">
<img src="logo.png">
<img src="">
<img src="data:image/png;base64,AAAA">
<img src="blob:http://127.0.0.1:8080/1234">
<img src="  spaced.png  ">
<picture>
  <source srcset="pic.avif, pic-2x.avif 2x" type="image/avif">
  <source media="(min-width: 800px)" srcset="pic-wide.webp">
  <img src="pic.jpg">
</picture>
<video src="movie.mp4" poster="poster.jpg">
  <source src="movie.webm" type="video/webm">
  <track src="subs.vtt" kind="subtitles">
</video>
<audio src="sound.mp3"><source src="sound.ogg"></audio>
<iframe src="frame.html#part"></iframe>
<iframe src="about:blank"></iframe>
<iframe srcdoc="<img src=srcdoc.png>"></iframe>
<embed src="plugin.swf">
<object data="object.svg"></object>
<input type="image" src="submit.png">
<input type="text" src="not-an-image-input.png">
<div style="background-image: url('inline-style.png')">text</div>
<table background="table-bg.png"><tr><td background="cell-bg.png">cell</td></tr></table>
<svg>
  <image href="svg-image.png"></image>
  <image xlink:href="svg-xlink.png"></image>
  <use href="#local"></use>
  <use xlink:href="sprite.svg#icon"></use>
  <a href="svg-link.html"><text>svg link</text></a>
</svg>
<template><img src="in-template.png"></template>
<noscript><img src="in-noscript.png"></noscript>
<img src="//cdn.example/protocol-relative.png">
<img src="https://other.example/absolute.png#frag">
<img src="javascript:alert(1)">
<a href="a.html">a</a>
<a href="a.html#section">a again, with a fragment</a>
<a href="#top">top</a>
<a href="/root.html?q=1">root</a>
<a href="">empty</a>
<a href="mailto:x@example.invalid">mail</a>
<a>no href</a>
<map><area href="area.html" shape="rect" coords="0,0,1,1"></map>
</body>
</html>`;

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
      { url: `${A}font.woff2`, kind: "preload", from: "link preload as=font" },
      { url: `${A}hero.png`, kind: "preload", from: "link preload as=image" },
      { url: `${A}hero-1x.png`, kind: "preload", from: "link preload imagesrcset" },
      { url: `${A}hero-2x.png`, kind: "preload", from: "link preload imagesrcset" },
      { url: `${A}mod.js`, kind: "preload", from: "link modulepreload" },
      { url: `${A}next-data.json`, kind: "other", from: "link prefetch" },
      { url: `${A}app.js`, kind: "script", from: "script src" },
      { url: `${A}module.js`, kind: "script", from: "script src" },
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
