/**
 * Blocking benchmark (--blockAds, --blockRules): the time and memory to load the ad host list (Debian's
 * uBlock Origin EasyList + EasyPrivacy), and what judging one request costs: the ad host lookup alone,
 * and the ad list with browsertrix-crawler-style rules, over a mix of ad, subdomain and ordinary URLs.
 * Prints one JSON line.
 *   node --expose-gc dist/bench/blocking.js [--requests 1000000]
 */
import { parseArgs } from "node:util";
import { loadAdHosts } from "../src/block/adHosts.js";
import { Blocking } from "../src/block/blocking.js";
import { parseBlockRule } from "../src/block/rules.js";

const { values } = parseArgs({ options: { requests: { type: "string", default: "1000000" } } });
const requests = Number(values.requests);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const heapMb = () => (gc(), Math.round(process.memoryUsage().heapUsed / 1e5) / 10);
const rssMb = () => Math.round(process.memoryUsage().rss / 1e5) / 10;

const heapBefore = heapMb();
const rssBefore = rssMb();
let started = performance.now();
const adHosts = loadAdHosts();
const loadMs = performance.now() - started;
const heapAfter = heapMb();
const rssAfter = rssMb();

const urls = [
  "https://securepubads.g.doubleclick.net/tag/js/gpt.js",
  "https://www.googletagmanager.com/gtm.js?id=GTM-XXXX",
  "https://www.example.org/assets/app.js",
  "https://cdn.example.org/img/a/b/c/photo-1234.jpg?w=800",
  "https://fonts.gstatic.com/s/roboto/v30/font.woff2",
  "https://static.wikipedia.invalid/images/logo.svg",
  "https://ib.adnxs.com/ut/v3/prebid",
  "https://a.b.c.d.e.example.net/deep/path/index.html",
];
const frameUrl = "https://www.example.org/news/article.html";

function perRequestNs(judge: (url: string) => unknown): number {
  for (let i = 0; i < 10_000; i++) judge(urls[i % urls.length]);
  const t = performance.now();
  let sink = 0;
  for (let i = 0; i < requests; i++) if (judge(urls[i % urls.length])) sink++;
  const ns = ((performance.now() - t) * 1e6) / requests;
  if (sink < 0) console.log(sink);
  return Math.round(ns);
}

const adsOnly = new Blocking({ rules: [], adHosts, blockMessage: "", adBlockMessage: "" });
const withRules = new Blocking({
  rules: [
    { url: "(example\\.org|youtube\\.com)", type: "allowOnly", inFrameUrl: "example\\.org" },
    { url: "lunr\\.min\\.js", inFrameUrl: "example\\.org" },
    { url: "youtube\\.com/embed/", type: "allowOnly", frameTextMatch: "channelId" },
  ].map((r) => parseBlockRule(r)),
  adHosts,
  blockMessage: "",
  adBlockMessage: "",
});
started = performance.now();
const hostLookupNs = perRequestNs((url) => adHosts.match(new URL(url).hostname));
const adsJudgeNs = perRequestNs((url) => adsOnly.judge({ url, frameUrl, navigation: false }).action !== "allow");
const rulesJudgeNs = perRequestNs((url) => withRules.judge({ url, frameUrl, navigation: false }).action !== "allow");

console.log(JSON.stringify({
  list: adHosts.name,
  version: adHosts.version,
  hosts: adHosts.size,
  loadMs: Math.round(loadMs),
  heapMb: Math.round((heapAfter - heapBefore) * 10) / 10,
  rssMb: Math.round((rssAfter - rssBefore) * 10) / 10,
  requests,
  perRequestNs: { hostLookup: hostLookupNs, adsOnly: adsJudgeNs, adsAndThreeRules: rulesJudgeNs },
  benchSeconds: Math.round((performance.now() - started) / 100) / 10,
}));
