/**
 * Frontier benchmark: what the crawl-state Redis spends on the queue. One page with L links of ~30
 * characters is queued (as a crawled page's links are: one admission batch), then P pages are crawled
 * through the frontier (take, queue their links - half new, half seen - and mark done). Prints one JSON
 * line: Redis bytes per queued URL (used_memory after - before, / URLs queued), Redis round trips and
 * commands (INFO commandstats: every command, those scripts run included) per queued link and per crawled
 * page, and Redis CPU per page (INFO used_cpu_sys + used_cpu_user).
 *   node dist/bench/frontier.js [--links 100000] [--pages 2000] [--smoke]
 *   node dist/bench/frontier.js --cluster --links 10000000 --pages 0   (3-node loopback cluster: bytes per node)
 */
import { parseArgs } from "node:util";
import { logger } from "../src/log/logger.js";
import { measureFrontier, SMOKE } from "./lib/frontierFigures.js";

const { values } = parseArgs({
  options: {
    links: { type: "string", default: "100000" },
    pages: { type: "string", default: "2000" },
    hosts: { type: "string", default: "1" },
    cluster: { type: "boolean", default: false },
    smoke: { type: "boolean", default: false },
  },
});
logger.setLevel("warn");
// --smoke: small enough for CI (test/unit/frontier/frontierCosts.test.ts), large enough that a seen bucket holds several keys.
const figures = await measureFrontier({
  links: values.smoke ? SMOKE.links : Number(values.links),
  pages: values.smoke ? SMOKE.pages : Number(values.pages),
  hosts: Math.max(1, Number(values.hosts)),
  cluster: values.cluster,
});
console.log(JSON.stringify(figures));
