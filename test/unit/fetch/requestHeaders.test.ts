import { describe, expect, it } from "vitest";
import { headerSecrets, parseHeaderRule, RequestHeaders } from "../../../src/fetch/requestHeaders.js";

describe("--header rules", () => {
  it("parse: every host, one host (and its subdomains), a host given apart; names and hosts checked", () => {
    expect(parseHeaderRule("From: a@b.org")).toEqual({ host: null, name: "From", value: "a@b.org" });
    expect(parseHeaderRule("Example.COM Cookie: a=1; b=2")).toEqual({ host: "example.com", name: "Cookie", value: "a=1; b=2" });
    expect(parseHeaderRule("*.example.com X-A: 1")).toEqual({ host: "example.com", name: "X-A", value: "1" });
    expect(parseHeaderRule("* X-A: 1")).toEqual({ host: null, name: "X-A", value: "1" });
    expect(parseHeaderRule("X-A: 1", "news.example.org")).toEqual({ host: "news.example.org", name: "X-A", value: "1" });
    expect(parseHeaderRule("X-Time: 12:30")).toEqual({ host: null, name: "X-Time", value: "12:30" });
    expect(() => parseHeaderRule("X-A 1")).toThrow(/takes "Name: value" or "host Name: value"/);
    expect(() => parseHeaderRule("a b X-A: 1")).toThrow(/takes "Name: value"/);
    expect(() => parseHeaderRule("a.test X-A: 1", "b.test")).toThrow(/takes "Name: value"/);
    expect(() => parseHeaderRule("content-length: 3")).toThrow(/cannot be set/);
    expect(() => parseHeaderRule("x/y.test X-A: 1")).toThrow(/is not a host name/);
    expect(() => parseHeaderRule("X(A): 1")).toThrow(/is not a header name/);
  });

  it("apply by host: subdomains yes, look-alike names no; later rules win; given headers replaced", () => {
    const headers = new RequestHeaders(["From: a@b.org", "example.com X-Token: t1", "www.example.com X-Token: t2", "FROM: c@d.org"].map((text) => parseHeaderRule(text)));
    expect(headers.for("https://example.com/")).toEqual([["FROM", "c@d.org"], ["X-Token", "t1"]]);
    expect(headers.for("https://www.example.com:8443/x")).toEqual([["FROM", "c@d.org"], ["X-Token", "t2"]]);
    expect(headers.for("https://badexample.com/")).toEqual([["FROM", "c@d.org"]]);
    expect(headers.for("not a url")).toEqual([]);
    expect(headers.with("http://a.example.com/", [["Accept", "*/*"], ["x-token", "old"]])).toEqual([["Accept", "*/*"], ["FROM", "c@d.org"], ["X-Token", "t1"]]);
    expect(RequestHeaders.none.with("http://a.example.com/", [["Accept", "*/*"]])).toEqual([["Accept", "*/*"]]);
  });

  it("values that look like credentials are secrets", () => {
    const rules = ["From: a@b.org", "Cookie: s=1", "X-Api-Key: k", "X-Long: 0123456789abcdef"].map((text) => parseHeaderRule(text));
    expect(headerSecrets(rules)).toEqual(["s=1", "k", "0123456789abcdef"]);
  });
});
