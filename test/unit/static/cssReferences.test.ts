import { describe, expect, it } from "vitest";
import { cssReferences } from "../../../src/static/cssReferences.js";

const BASE = "http://127.0.0.1:8080/site/css/style.css";

describe("cssReferences", () => {
  it("reads url() quoted and unquoted, escapes, and skips comments, strings and what fetches nothing", () => {
    const css = String.raw`
/* url(in-comment.png) @import "in-comment.css"; */
body { background: url(bg.png) no-repeat; }
.a { background-image: url( "quoted double.png" ) }
.b { background-image: url('single.png#frag'); }
.c { content: "url(in-string.png)"; list-style: URL(upper.png); }
.d { background: url(esc\(aped\).png), url(\68 ex.png); }
.e { background: url("line\
continued.png"); }
.f { background: url(data:image/png;base64,AAAA), url(""), url(   ), url(javascript:void\(0\)); }
.g { background: url(bad"url.png) , url(/root.png), url(//other.example/proto.png), url(https://cdn.example/abs.png?x=1); }
.h { background: image-set("set-1x.png" 1x, url(set-2x.png) 2x); cursor: url(bg.png), auto; }
.i { background: src(ignored.png); --x: "not-a-url.png"; }
@font-face { font-family: F; src: url(font.woff2) format("woff2"), url("font.woff") format("woff"); }
.j { background: url(after-font.png) }
`;
    expect(cssReferences(css, BASE)).toEqual({
      imports: [],
      urls: [
        "http://127.0.0.1:8080/site/css/bg.png",
        "http://127.0.0.1:8080/site/css/quoted%20double.png",
        "http://127.0.0.1:8080/site/css/single.png",
        "http://127.0.0.1:8080/site/css/upper.png",
        "http://127.0.0.1:8080/site/css/esc(aped).png",
        "http://127.0.0.1:8080/site/css/hex.png",
        "http://127.0.0.1:8080/site/css/linecontinued.png",
        "http://127.0.0.1:8080/root.png",
        "http://other.example/proto.png",
        "https://cdn.example/abs.png?x=1",
        "http://127.0.0.1:8080/site/css/set-1x.png",
        "http://127.0.0.1:8080/site/css/set-2x.png",
        "http://127.0.0.1:8080/site/css/font.woff2",
        "http://127.0.0.1:8080/site/css/font.woff",
        "http://127.0.0.1:8080/site/css/after-font.png",
      ],
      fonts: ["http://127.0.0.1:8080/site/css/font.woff2", "http://127.0.0.1:8080/site/css/font.woff"],
    });
  });

  it("reads every @import form as an import, not as a url", () => {
    const css = `
@charset "utf-8";
@import "plain.css";
@import 'single.css' screen;
@import url(unquoted.css) print;
@import url("quoted.css") layer(base) supports(display: grid);
@IMPORT "upper.css";
/* @import "commented.css"; */
@import "plain.css";
a { background: url(img.png) }
@media screen { .x { background: url("media.png") } }
`;
    expect(cssReferences(css, BASE)).toEqual({
      imports: [
        "http://127.0.0.1:8080/site/css/plain.css",
        "http://127.0.0.1:8080/site/css/single.css",
        "http://127.0.0.1:8080/site/css/unquoted.css",
        "http://127.0.0.1:8080/site/css/quoted.css",
        "http://127.0.0.1:8080/site/css/upper.css",
      ],
      urls: ["http://127.0.0.1:8080/site/css/img.png", "http://127.0.0.1:8080/site/css/media.png"],
      fonts: [],
    });
  });

  it("an unterminated comment hides the rest; an unterminated url() still names its URL", () => {
    expect(cssReferences("a { background: url(x.png) } /* url(y.png)", BASE).urls).toEqual(["http://127.0.0.1:8080/site/css/x.png"]);
    expect(cssReferences("a { background: url(open.png", BASE).urls).toEqual(["http://127.0.0.1:8080/site/css/open.png"]);
  });
});
