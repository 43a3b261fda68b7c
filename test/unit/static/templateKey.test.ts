import { describe, expect, it } from "vitest";
import { scriptIdentity, templateKey } from "../../../src/static/templateKey.js";

function page(options: { title: string; text: string; ver: string; items: number; extraScript?: string; postId: number }): string {
  const items = Array.from({ length: options.items }, (_, i) => `<li><a href="/p/${i}">item ${i}</a></li>`).join("");
  return `<!doctype html><html><head><title>${options.title}</title>
<link rel="stylesheet" href="/css/site.css?ver=${options.ver}">
<link rel="stylesheet" href="https://fonts.thirdparty.example/css?family=${options.title}">
<script src="/js/app.js?v=${options.ver}&amp;lang=en"></script>
<script src="https://static.example.com/js/shared.js?_=${options.ver}"></script>
<script src="https://ads.thirdparty.example/ad.js?slot=${options.title}"></script>
${options.extraScript ? `<script src="${options.extraScript}"></script>` : ""}
</head><body class="page-${options.postId}">
<header id="top" class="site-header banner"><nav><ul class="menu">${items}</ul></nav></header>
<main><article id="post-${options.postId}" class="post"><h1>${options.title}</h1><p>${options.text}</p><p>more <em>text</em></p></article></main>
<footer>footer</footer>
</body></html>`;
}

const URL_A = "https://www.example.com/blog/first.html";
const URL_B = "https://www.example.com/blog/second.html";

describe("templateKey", () => {
  it("two pages of one template, with different text, lists, post ids and ?ver= get one key", () => {
    const a = templateKey(page({ title: "First", text: "Hello", ver: "1.2", items: 3, postId: 12 }), URL_A);
    const b = templateKey(page({ title: "Second", text: "Other words entirely", ver: "1.3", items: 7, postId: 3456 }), URL_B);
    expect(a).toEqual({
      key: a.key,
      scripts: ["https://static.example.com/js/shared.js", "https://www.example.com/js/app.js?lang=en"],
      stylesheets: ["https://www.example.com/css/site.css"],
      skeleton: [
        "header#top.banner.site-header",
        "header#top.banner.site-header>nav",
        "header#top.banner.site-header>nav>ul.menu",
        "main",
        "main>article#post-0.post",
        "main>article#post-0.post>h1",
        "main>article#post-0.post>p",
        "footer",
      ],
    });
    expect(a.key).toMatch(/^[0-9a-f]{16}$/);
    expect(b).toEqual(a);
  });

  it("a page naming one more same-site script gets another key; one more third-party script does not", () => {
    const base = templateKey(page({ title: "First", text: "Hello", ver: "1", items: 3, postId: 1 }), URL_A);
    const more = templateKey(page({ title: "First", text: "Hello", ver: "1", items: 3, postId: 1, extraScript: "/js/gallery.js" }), URL_A);
    expect(more.scripts).toEqual(["https://static.example.com/js/shared.js", "https://www.example.com/js/app.js?lang=en", "https://www.example.com/js/gallery.js"]);
    expect(more.key).not.toBe(base.key);
    const thirdParty = templateKey(page({ title: "First", text: "Hello", ver: "1", items: 3, postId: 1, extraScript: "https://cdn.other.example/x.js" }), URL_A);
    expect(thirdParty.key).toBe(base.key);
  });

  it("a page with another skeleton (a sidebar) gets another key", () => {
    const base = templateKey(page({ title: "First", text: "Hello", ver: "1", items: 3, postId: 1 }), URL_A);
    const withSidebar = templateKey(page({ title: "First", text: "Hello", ver: "1", items: 3, postId: 1 }).replace("<footer>", `<aside class="sidebar"></aside><footer>`), URL_A);
    expect(withSidebar.skeleton).toEqual([...base.skeleton.slice(0, -1), "aside.sidebar", "footer"]);
    expect(withSidebar.key).not.toBe(base.key);
  });

  it("links, images and spans are content, not skeleton: a first page without the 'previous' link shares its template; a frame or a video does not", () => {
    const chapter = (nav: string, media = "") =>
      `<!doctype html><html><head><script src="/book.js"></script></head><body><div id="page-wrapper" class="page-wrapper">${media}<nav class="nav-wide-wrapper">${nav}</nav>` +
      `<main><p>text <img src="/ferris.svg"> <span class="hint">and</span> <code>code</code></p></main></div></body></html>`;
    const both = templateKey(chapter(`<a class="nav-chapters previous" href="ch01.html">&larr;</a><a class="nav-chapters next" href="ch03.html">&rarr;</a>`), URL_A);
    const first = templateKey(chapter(`<a class="nav-chapters next" href="ch02.html">&rarr;</a>`), URL_A);
    const none = templateKey(chapter(""), URL_B);
    expect(both.skeleton).toEqual(["div#page-wrapper.page-wrapper", "div#page-wrapper.page-wrapper>nav.nav-wide-wrapper", "div#page-wrapper.page-wrapper>main", "div#page-wrapper.page-wrapper>main>p"]);
    expect(first.key).toBe(both.key);
    expect(none.key).toBe(both.key);
    for (const media of [`<iframe src="/player.html"></iframe>`, `<video src="/clip.mp4"></video>`]) {
      const withMedia = templateKey(chapter("", media), URL_A);
      expect(withMedia.skeleton, media).toContain(`div#page-wrapper.page-wrapper>${media.slice(1, media.indexOf(" "))}`);
      expect(withMedia.key, media).not.toBe(both.key);
    }
  });

  it("a script in the page's own folder is named by its name: one template across folders that each have their own (rustdoc's sidebar-items.js)", () => {
    const item = (root: string) =>
      `<!doctype html><html><head><script defer src="sidebar-items.js?v=3"></script><script defer src="${root}main.js"></script></head>` +
      `<body><nav class="sidebar"></nav><main><h1>item</h1></main></body></html>`;
    const io = templateKey(item("../../"), "https://doc.example.org/std/io/struct.Error.html");
    const env = templateKey(item("../../"), "https://doc.example.org/std/env/struct.Args.html");
    expect(io.scripts).toEqual(["./sidebar-items.js", "https://doc.example.org/main.js"]);
    expect(env.key).toBe(io.key);
    // The same script named from another folder is another page's: its URL stays whole.
    const elsewhere = templateKey(item("../../").replace(`src="sidebar-items.js?v=3"`, `src="../io/sidebar-items.js"`), "https://doc.example.org/std/env/struct.Args.html");
    expect(elsewhere.scripts).toEqual(["https://doc.example.org/main.js", "https://doc.example.org/std/io/sidebar-items.js"]);
    expect(elsewhere.key).not.toBe(io.key);
    expect(scriptIdentity("https://doc.example.org/std/io/sidebar-items.js", "https://doc.example.org/std/io/")).toBe("./sidebar-items.js");
    expect(scriptIdentity("https://cdn.example.org/std/io/sidebar-items.js", "https://doc.example.org/std/io/x.html")).toBe("https://cdn.example.org/std/io/sidebar-items.js");
  });
});
