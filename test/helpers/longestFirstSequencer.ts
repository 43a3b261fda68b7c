import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * Starts the test files that take longest first, from a static table of measured seconds, so that the two
 * workers finish together. Vitest's own order needs its duration cache, which a fresh CI machine lacks (then
 * it goes by file size, which puts short files with long tables before the multi-process crawls).
 * A file not in the table counts as `unknownSeconds`.
 */
export function longestFirstSequencer(secondsByFile: Readonly<Record<string, number>>, unknownSeconds: number) {
  return class LongestFirstSequencer extends BaseSequencer {
    override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
      const seconds = (spec: TestSpecification) => secondsByFile[relative(spec.project.config.root, spec.moduleId)] ?? unknownSeconds;
      // Ties (and unknown files) keep a stable, readable order: by path.
      return [...files].sort((a, b) => seconds(b) - seconds(a) || a.moduleId.localeCompare(b.moduleId));
    }
  };
}
