import { describe, expect, it } from "vitest";
import { selectorsHeld } from "../../../src/static/selectorMatch.js";

const MODULE_INDEX = `<!doctype html><html><head><title>Module index</title></head><body>
<div class="body"><table class="indextable modindextable">
<tr class="cap"><td></td><td><a name="cap-a"><strong>a</strong></a></td></tr>
<tr><td><img src="_static/minus.png" class="toggler" id="toggle-1" style="display: none" alt="-"></td><td><code>asyncio</code></td></tr>
<tr class="cg-1"><td></td><td><a href="library/asyncio.html"><code>asyncio.events</code></a></td></tr>
</table><template><img class="inside-template"></template></div>
<input type="text" name="q"></body></html>`;

describe("selectorsHeld", () => {
  it("says which selectors the parsed document holds a match for, as a browser's querySelector would", () => {
    const selectors = ["img.toggler", "tr.cg-1", "table.modindextable tr > td code", "#toggle-1", "input[name=q]", "div.sphinxsidebar", ".highlight pre", "img.inside-template", "a[name^=cap]", "td:first-child img"];
    expect(selectorsHeld(MODULE_INDEX, selectors)).toEqual(["img.toggler", "tr.cg-1", "table.modindextable tr > td code", "#toggle-1", "input[name=q]", "a[name^=cap]", "td:first-child img"]);
  });

  it("a selector of one class or one id is read from the document's index: held as querySelector finds it", () => {
    // .inside-template is only in a <template>'s content, which querySelector does not search; class names are words.
    const selectors = [".toggler", ".inside-template", "#toggle-1", "#toggle", ".cg-1", ".cg", ".modindextable", ".body, .nowhere", "#cap-a"];
    expect(selectorsHeld(MODULE_INDEX, selectors)).toEqual([".toggler", "#toggle-1", ".cg-1", ".modindextable", ".body, .nowhere"]);
  });

  it("a selector it cannot read, or only a live page has, is no match; none asked, none held", () => {
    expect(selectorsHeld(MODULE_INDEX, ["img[", "img.toggler:hover", "::slotted(img)"])).toEqual([]);
    expect(selectorsHeld(MODULE_INDEX, [])).toEqual([]);
  });
});
