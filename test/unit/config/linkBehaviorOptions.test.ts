import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildCrawlProgram, crawlFlags } from "../../../src/cli/crawl.js";
import { resolveCrawlOptions } from "../../../src/config/crawlOptions.js";
import { linkBehaviorOptions, parseLinkSelector } from "../../../src/config/groups/linkBehaviorOptions.js";
import { OptionsError } from "../../../src/config/optionsError.js";

const dir = mkdtempSync(join(tmpdir(), "link-behavior-options-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function optionsFrom(args: string[]) {
  const program = buildCrawlProgram().exitOverride().configureOutput({ writeErr: () => undefined, writeOut: () => undefined });
  return resolveCrawlOptions(crawlFlags(program, args, "user", {}), {}).linkBehavior;
}

describe("--selectLinks entries (browsertrix-crawler's selector->property / selector->@attribute)", () => {
  it("reads the property (falling back to the attribute), the attribute only with @, href for a bare selector", () => {
    expect(parseLinkSelector("a[href]->href")).toEqual({ selector: "a[href]", extract: "href", attrOnly: false });
    expect(parseLinkSelector("div[data-url] -> @data-url")).toEqual({ selector: "div[data-url]", extract: "data-url", attrOnly: true });
    expect(parseLinkSelector("a.next")).toEqual({ selector: "a.next", extract: "href", attrOnly: false });
  });

  it("splits on commas as browsertrix does; none given is the default (a[href] and area[href])", () => {
    expect(linkBehaviorOptions({ selectLinks: ["a[href]->href,button[data-u]->@data-u"] }).selectLinks.map((s) => s.selector)).toEqual(["a[href]", "button[data-u]"]);
    expect(linkBehaviorOptions({}).selectLinks.map((s) => s.selector)).toEqual(["a[href]", "area[href]"]);
  });

  it("refuses a selector that does not parse, with a one-line OptionsError", () => {
    expect(() => parseLinkSelector("a[href->href")).toThrow(OptionsError);
    expect(() => linkBehaviorOptions({ clickSelector: ">>" })).toThrow(/--clickSelector: ">>" is not a valid CSS selector/);
  });

  it("takes browsertrix-crawler's spellings on the command line and in a config file", () => {
    expect(optionsFrom(["--url", "http://a.test/", "--linkSelector", "div[data-href]->data-href"]).selectLinks).toEqual([{ selector: "div[data-href]", extract: "data-href", attrOnly: false }]);
    const config = join(dir, "c.yaml");
    writeFileSync(config, "url: http://a.test/\nselectLinks: ['a[href]->href', 'div[data-href]->@data-href']\nclickSelector: button\nalwaysAddBehaviorLinks: true\n");
    expect(optionsFrom(["--config", config])).toMatchObject({
      selectLinks: [{ selector: "a[href]" }, { selector: "div[data-href]", attrOnly: true }], clickSelector: "button", alwaysAddBehaviorLinks: true, customBehaviors: [], userFlows: [],
    });
  });
});

describe("--extractFormLinks / --extractFeedLinks (ours)", () => {
  it("both on by default; --no-... on the command line or false in a config file turns each off; the command line wins", () => {
    expect(optionsFrom(["--url", "http://a.test/"]).linkKinds).toEqual({ forms: true, feeds: true });
    expect(optionsFrom(["--url", "http://a.test/", "--no-extractFormLinks"]).linkKinds).toEqual({ forms: false, feeds: true });
    expect(optionsFrom(["--url", "http://a.test/", "--no-extractFeedLinks"]).linkKinds).toEqual({ forms: true, feeds: false });
    const config = join(dir, "kinds.yaml");
    writeFileSync(config, "url: http://a.test/\nextractFormLinks: false\nextractFeedLinks: false\n");
    expect(optionsFrom(["--config", config]).linkKinds).toEqual({ forms: false, feeds: false });
    expect(optionsFrom(["--config", config, "--extractFormLinks"]).linkKinds).toEqual({ forms: true, feeds: false });
    writeFileSync(config, "url: http://a.test/\nextractFeedLinks: no\n");
    expect(() => optionsFrom(["--config", config])).toThrow(/extractFeedLinks must be true or false/);
  });
});

describe("--customBehaviors local sources", () => {
  it("reads a file, or every .js file of a folder; anything else is an OptionsError", () => {
    const file = join(dir, "one.js");
    writeFileSync(file, "class One { static id = 'One'; static isMatch() { return false; } static init() { return {}; } async* run() {} }");
    expect(linkBehaviorOptions({ customBehaviors: [file] }).customBehaviors.map((b) => b.source)).toEqual([file]);
    expect(linkBehaviorOptions({ customBehaviors: [dir] }).customBehaviors.map((b) => b.source)).toEqual([file]);
    expect(() => linkBehaviorOptions({ customBehaviors: [join(dir, "none.js")] })).toThrow(/no such file or folder/);
    const flow = join(dir, "flow.json");
    writeFileSync(flow, "{}");
    expect(() => linkBehaviorOptions({ customBehaviors: [flow] })).toThrow(/flow\.json: not a recorder flow: no "steps" list/);
    writeFileSync(flow, JSON.stringify({ title: "t", steps: [{ type: "navigate", url: "http://a.test/" }, { type: "click", selectors: [["#b"]] }] }));
    const options = linkBehaviorOptions({ customBehaviors: [dir] });
    expect(options.customBehaviors.map((b) => b.source)).toEqual([file]);
    expect(options.userFlows).toEqual([{ id: flow, url: "http://a.test/", steps: [{ type: "click", selectors: [["#b"]] }] }]);
  });
});
