import type { RelationRequirement } from "../datapackage.js";
import { openWacz, WaczReadError } from "./zipReader.js";

/**
 * relation.requires of a WACZ's datapackage.json: the WACZ files its revisits point into. Entries without a
 * filename are left out; a WACZ with no datapackage.json, or one that is not JSON, is a WaczReadError.
 */
export async function relationRequiresOf(location: string): Promise<RelationRequirement[]> {
  const wacz = await openWacz(location);
  try {
    if (!wacz.hasEntry("datapackage.json")) throw new WaczReadError(`${location}: not a WACZ (no datapackage.json)`);
    let pkg: { relation?: { requires?: unknown } };
    try {
      pkg = JSON.parse((await wacz.readEntry("datapackage.json")).toString("utf8")) as typeof pkg;
    } catch (err) {
      if (err instanceof WaczReadError) throw err;
      throw new WaczReadError(`${location}: datapackage.json is not valid JSON`);
    }
    const requires = pkg.relation?.requires;
    if (requires === undefined) return [];
    if (!Array.isArray(requires)) throw new WaczReadError(`${location}: relation.requires in datapackage.json is not a list`);
    return requires.filter((r): r is RelationRequirement => typeof r === "object" && r !== null && typeof (r as RelationRequirement).filename === "string");
  } finally {
    await wacz.close();
  }
}
