import { describe, expect, it } from "vitest";
import { rateLimitRuleMatched } from "../../../src/capture/pageAnswers.js";
import { OriginRedirects } from "../../../src/capture/requests/originOverride.js";
import { parseOriginOverride, parseRateLimitRule } from "../../../src/config/groups/tabCaptureOptions.js";
import { rulesOutsideACrawl } from "../../../src/fetch/connectionRules.js";

const LOCAL_RULES = rulesOutsideACrawl();

const bytes = (text: string) => new TextEncoder().encode(text);

describe("--rateLimitOnMatch and --originOverride as the capture applies them", () => {
  it("a rule matches text types only, with its status", () => {
    const rules = [parseRateLimitRule("BUSY:200"), parseRateLimitRule("blocked")];
    expect(rateLimitRuleMatched(rules, "text/html", 200, bytes("<p>BUSY</p>"))?.status).toBe(200);
    expect(rateLimitRuleMatched(rules, "text/html", 404, bytes("<p>BUSY</p>"))).toBeNull();
    expect(rateLimitRuleMatched(rules, "application/json", 503, bytes('{"x":"blocked"}'))?.status).toBe(0);
    expect(rateLimitRuleMatched(rules, "image/png", 200, bytes("BUSY"))).toBeNull();
  });

  it("origin override: same origin only (not a longer host or port), path and query kept", () => {
    const redirects = new OriginRedirects([parseOriginOverride("http://a.test=http://127.0.0.1:9000")]);
    expect(redirects.target("http://a.test/p?q=1")).toBe("http://127.0.0.1:9000/p?q=1");
    expect(redirects.target("http://a.test:81/p")).toBeNull();
    expect(redirects.target("http://a.test.evil/p")).toBeNull();
    expect(redirects.target("https://a.test/p")).toBeNull();
  });
});

describe("fetches outside the browser with --originOverride", () => {
  it("go to the new origin and keep the URL asked for", async () => {
    const { createServer } = await import("node:http");
    const { FallbackFetcher } = await import("../../../src/fetch/fallbackFetcher.js");
    const hits: string[] = [];
    const start = (name: string) => new Promise<{ origin: string; close(): void }>((resolve) => {
      const server = createServer((req, res) => {
        hits.push(`${name} ${req.url}`);
        res.writeHead(200, { "Content-Type": "application/octet-stream" }).end(`${name}-bytes`);
      }).listen(0, "127.0.0.1", () => {
        const address = server.address();
        resolve({ origin: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`, close: () => server.close() });
      });
    });
    const original = await start("original");
    const override = await start("override");
    try {
      const redirects = new OriginRedirects([parseOriginOverride(`${original.origin}=${override.origin}`)]);
      const fetcher = new FallbackFetcher({ rules: LOCAL_RULES, userAgent: null, target: (url) => redirects.target(url) });
      const exchange = await fetcher.page(`${original.origin}/file.bin?x=1`, 10_000, "download");
      expect(exchange?.url).toBe(`${original.origin}/file.bin?x=1`);
      expect(exchange?.body.kind === "bytes" ? Buffer.from(exchange.body.bytes).toString() : null).toBe("override-bytes");
      expect(hits).toEqual(["override /file.bin?x=1"]);
    } finally {
      original.close();
      override.close();
    }
  });
});
