/** Parsing Chrome Recorder flows for --customBehaviors (src/config/recorderFlows.ts) and their selectors for puppeteer. */
import { describe, expect, it } from "vitest";
import { puppeteerSelector } from "../../../src/behaviors/flowRunner.js";
import { OptionsError } from "../../../src/config/optionsError.js";
import { parseUserFlow } from "../../../src/config/recorderFlows.js";

describe("parseUserFlow", () => {
  it("cuts the flow at each navigate step: the URL prefix of the steps after it; setViewport is dropped", () => {
    const flow = {
      title: "two pages",
      steps: [
        { type: "setViewport", width: 800, height: 600 },
        { type: "keyDown", key: "Escape" },
        { type: "navigate", url: "http://h.test/a" },
        { type: "click", selectors: [["aria/Go"], ["#go"]], offsetX: 3, offsetY: 4 },
        { type: "navigate", url: "http://h.test/b" },
        { type: "change", selectors: [["input"]], value: "hi" },
        { type: "waitForElement", selectors: [["text/Done"]] },
      ],
    };
    expect(parseUserFlow(JSON.stringify(flow), "f.json")).toEqual([
      { id: "f.json", url: "", steps: [{ type: "keyDown", key: "Escape" }] },
      { id: "f.json_2", url: "http://h.test/a", steps: [{ type: "click", selectors: [["aria/Go"], ["#go"]], offsetX: 3, offsetY: 4 }] },
      { id: "f.json_3", url: "http://h.test/b", steps: [{ type: "change", selectors: [["input"]], value: "hi" }, { type: "waitForElement", selectors: [["text/Done"]] }] },
    ]);
  });

  it("names the first part after the file when the flow starts with a navigate step", () => {
    const flows = parseUserFlow(JSON.stringify({ steps: [{ type: "navigate", url: "http://h.test/" }, { type: "scroll", x: 0, y: 100 }] }), "f.json");
    expect(flows).toEqual([{ id: "f.json", url: "http://h.test/", steps: [{ type: "scroll", x: 0, y: 100 }] }]);
  });

  it.each([
    ["{", /^--customBehaviors f\.json: not a recorder flow: bad JSON \(/],
    ["[]", /not a recorder flow: no "steps" list$/],
    ['{"steps": []}', /"steps" is empty$/],
    ['{"steps": [{"url": "x"}]}', /step 1 has no "type"$/],
    ['{"steps": [{"type": "click"}]}', /step 1 \(click\) has no "selectors"$/],
    ['{"steps": [{"type": "click", "selectors": "#a"}]}', /step 1 \(click\): "selectors" must be a list/],
    ['{"steps": [{"type": "change", "selectors": ["#a"]}]}', /step 1 \(change\) has no "value"$/],
    ['{"steps": [{"type": "keyUp"}]}', /step 1 \(keyUp\) has no "key"$/],
    ['{"steps": [{"type": "navigate"}]}', /a navigate step without a "url"$/],
  ])("refuses %s with one line naming the file", (text, message) => {
    let error: unknown;
    try {
      parseUserFlow(text, "f.json");
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(OptionsError);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain("\n");
  });
});

describe("puppeteerSelector", () => {
  it("turns the Recorder's prefixes into puppeteer's selectors; a list pierces shadow roots", () => {
    expect(puppeteerSelector("#a > b")).toBe("#a > b");
    expect(puppeteerSelector("aria/Say \"hi\"")).toBe('::-p-aria("Say \\"hi\\"")');
    expect(puppeteerSelector("text/Load more")).toBe('::-p-text("Load more")');
    expect(puppeteerSelector("xpath///*[@id=\"x\"]")).toBe('::-p-xpath("//*[@id=\\"x\\"]")');
    expect(puppeteerSelector("pierce/#in")).toBe(":scope >>> #in");
    expect(puppeteerSelector(["my-app", "button.go"])).toBe("my-app >>>> button.go");
  });
});
