// A page naming one of every kind of requisite and link documentReferences() reads, shared by its tests.

/** Where the tests serve it: its <base href="../assets/"> makes the requisites /site/assets/... */
export const EVERY_KIND_PATH = "/site/dir/page.html";

export const EVERY_KIND_HTML = `<!doctype html>
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
  <style>svg { background-image: url("svg-style.png") }</style>
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
