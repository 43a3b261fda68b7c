import { describe, expect, it } from "vitest";
import { guardChoice } from "../../../src/hybrid/captureGuard.js";
import type { LearnedTemplate } from "../../../src/hybrid/templateLearning.js";

const SITE = "https://example.com";

const LEARNED: LearnedTemplate = {
  observations: 2,
  scripts: [`${SITE}/app.js`, "https://cdn.example.net/lib.js"],
  fixedFetches: ["https://cdn.example.net/config.json"],
  fetchRules: [`${SITE}/api/{stem}.json`],
  volatilePaths: ["https://stats.example.org/b"],
  pageSpecificFetches: [],
  fixedLinks: [`${SITE}/about`],
  linkRules: [`${SITE}/comments?article={stem}`],
  pageSpecificLinks: [],
  behaviorsFound: false,
  absentSelectors: [],
};

const PAGE = `${SITE}/articles/baz.html`;
const SCRIPTS = [`${SITE}/app.js?v=7`, "https://cdn.example.net/lib.js"];

describe("guardChoice", () => {
  it("static, with the fixed and derived fetches and links, when the browsed pages cover the page", () => {
    expect(guardChoice(LEARNED, PAGE, SCRIPTS)).toEqual({
      static: true,
      fetches: ["https://cdn.example.net/config.json", `${SITE}/api/baz.json`],
      links: [`${SITE}/about`, `${SITE}/comments?article=baz`],
    });
    expect(guardChoice(LEARNED, PAGE, [])).toEqual(guardChoice(LEARNED, PAGE, SCRIPTS));
  });

  it("browser when the document names scripts no browsed page named (at most 3 listed, cache busters aside)", () => {
    const scripts = [...SCRIPTS, `${SITE}/new1.js`, `${SITE}/new2.js?v=1`, `${SITE}/new3.js`, `${SITE}/new4.js`];
    expect(guardChoice(LEARNED, PAGE, scripts)).toEqual({
      static: false,
      reason: `the document names scripts no browsed page of its template named: ${SITE}/new1.js, ${SITE}/new2.js, ${SITE}/new3.js (and 1 more)`,
    });
    expect(guardChoice(LEARNED, PAGE, [`${SITE}/app.js?v=8&lang=fr`])).toEqual({
      static: false,
      reason: `the document names scripts no browsed page of its template named: ${SITE}/app.js?lang=fr`,
    });
  });

  it("a script of the page's own folder is known by its name: a page in another folder naming its own copy goes static, one naming the learned folder's copy does not", () => {
    const learned: LearnedTemplate = { ...LEARNED, scripts: ["./sidebar-items.js", ...LEARNED.scripts] };
    expect(guardChoice(learned, `${SITE}/env/struct.Args.html`, [...SCRIPTS, `${SITE}/env/sidebar-items.js`])).toMatchObject({ static: true });
    expect(guardChoice(learned, `${SITE}/env/struct.Args.html`, [...SCRIPTS, `${SITE}/io/sidebar-items.js`])).toEqual({
      static: false,
      reason: `the document names scripts no browsed page of its template named: ${SITE}/io/sidebar-items.js`,
    });
  });

  it("browser when behaviors found anything", () => {
    expect(guardChoice({ ...LEARNED, behaviorsFound: true }, PAGE, SCRIPTS)).toEqual({ static: false, reason: "behaviors found content on the template's browsed pages" });
  });

  it("browser when the browsed pages fetched or linked URLs of their own", () => {
    const fetched = ["https://x.example/1", "https://x.example/2", "https://x.example/3", "https://x.example/4", "https://x.example/5"];
    expect(guardChoice({ ...LEARNED, pageSpecificFetches: fetched }, PAGE, SCRIPTS)).toEqual({
      static: false,
      reason: "the template's browsed pages fetched URLs of their own: https://x.example/1, https://x.example/2, https://x.example/3 (and 2 more)",
    });
    expect(guardChoice({ ...LEARNED, pageSpecificLinks: [`${SITE}/related/1`] }, PAGE, SCRIPTS)).toEqual({
      static: false,
      reason: `the template's browsed pages had links of their own: ${SITE}/related/1`,
    });
  });

  it("browser when a rule cannot be filled in from the page's URL", () => {
    expect(guardChoice(LEARNED, `${SITE}/articles/`, SCRIPTS)).toEqual({
      static: false,
      reason: `the rule ${SITE}/api/{stem}.json needs {stem}, which ${SITE}/articles/ does not have`,
    });
  });
});
