// Sorting a WACZ's CDXJ lines with bounded memory: lines are gathered into runs of at most
// `runBytes`, each run is sorted and spilled to a temp file, and the runs are merged k ways while
// the index is written. A crawl of millions of URLs then needs memory for one run, not the whole
// index. Order is bytewise on UTF-8 (LC_ALL=C sort), the same as sortCdxjLines.
import { createReadStream } from "node:fs";
import { mkdtemp, open, rm } from "node:fs/promises";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";

/** Default run size: sorted in memory (with a UTF-8 copy of each line as its key), then spilled. */
export const DEFAULT_SORT_RUN_BYTES = 16 * 1024 * 1024;

export interface SortedLines {
  /** Number of lines. */
  count: number;
  /** Bytes of the lines as written with one "\n" each. */
  bytes: number;
  /** The lines in order; can be iterated once. */
  lines(): AsyncGenerator<string, void, undefined>;
  /** Remove the temp files (also done when lines() has been read to the end). */
  cleanup(): Promise<void>;
}

interface Keyed {
  line: string;
  key: Buffer;
}

function byBytes(a: Keyed, b: Keyed): number {
  return Buffer.compare(a.key, b.key);
}

function sortRun(lines: string[]): string[] {
  return lines
    .map((line) => ({ line, key: Buffer.from(line, "utf8") }))
    .sort(byBytes)
    .map((x) => x.line);
}

async function writeRun(path: string, lines: string[]): Promise<void> {
  const fh = await open(path, "wx");
  try {
    for (let i = 0; i < lines.length; i += 4096) await fh.write(lines.slice(i, i + 4096).join("\n") + "\n", null, "utf8");
  } finally {
    await fh.close();
  }
}

async function* runLines(path: string): AsyncGenerator<string, void, undefined> {
  const decoder = new StringDecoder("utf8");
  let pending = "";
  for await (const chunk of createReadStream(path, { highWaterMark: 64 * 1024 })) {
    pending += decoder.write(chunk as Buffer);
    let start = 0;
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n", start)) {
      yield pending.slice(start, nl);
      start = nl + 1;
    }
    pending = pending.slice(start);
  }
}

/** A binary min-heap of the runs' current lines. */
class RunHeap {
  private readonly items: (Keyed & { run: number })[] = [];

  get size(): number {
    return this.items.length;
  }

  push(item: Keyed & { run: number }): void {
    const items = this.items;
    items.push(item);
    for (let i = items.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (byBytes(items[parent]!, items[i]!) <= 0) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  pop(): Keyed & { run: number } {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length) {
      items[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < items.length && byBytes(items[l]!, items[min]!) < 0) min = l;
        if (r < items.length && byBytes(items[r]!, items[min]!) < 0) min = r;
        if (min === i) break;
        [items[min], items[i]] = [items[i]!, items[min]!];
        i = min;
      }
    }
    return top;
  }
}

/**
 * Sort lines (no trailing newlines) bytewise. Runs beyond `runBytes` are spilled to a private
 * directory made under `tmpDir`, which is removed once the merged lines are read or cleanup() is
 * called; a single run never touches the disk.
 */
export async function sortLinesExternally(
  source: AsyncIterable<string>,
  options: { tmpDir: string; runBytes?: number },
): Promise<SortedLines> {
  const runBytes = options.runBytes ?? DEFAULT_SORT_RUN_BYTES;
  let workDir: string | null = null;
  const runPaths: string[] = [];
  let run: string[] = [];
  let runSize = 0;
  let count = 0;
  let bytes = 0;
  const cleanup = async () => {
    if (workDir) await rm(workDir, { recursive: true, force: true });
  };
  try {
    for await (const line of source) {
      const size = Buffer.byteLength(line, "utf8") + 1;
      run.push(line);
      runSize += size;
      count += 1;
      bytes += size;
      if (runSize >= runBytes) {
        workDir ??= await mkdtemp(join(options.tmpDir, "cdxj-sort-"));
        const path = join(workDir, `run-${runPaths.length}.cdxj`);
        await writeRun(path, sortRun(run));
        runPaths.push(path);
        run = [];
        runSize = 0;
      }
    }
  } catch (err) {
    await cleanup();
    throw err;
  }
  const last = sortRun(run);
  run = [];

  async function* merged(): AsyncGenerator<string, void, undefined> {
    try {
      if (!runPaths.length) {
        yield* last;
        return;
      }
      const sources = runPaths.map((path) => runLines(path));
      sources.push((async function* () { yield* last; })());
      const heap = new RunHeap();
      const advance = async (index: number) => {
        const next = await sources[index]!.next();
        if (!next.done) heap.push({ line: next.value, key: Buffer.from(next.value, "utf8"), run: index });
      };
      for (let i = 0; i < sources.length; i++) await advance(i);
      while (heap.size) {
        const top = heap.pop();
        yield top.line;
        await advance(top.run);
      }
    } finally {
      await cleanup();
    }
  }

  return { count, bytes, lines: merged, cleanup };
}
