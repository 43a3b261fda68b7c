import { createHash } from "node:crypto";

/** Resource types a page's own scripts fetch: where a feed's batches come from. */
const SCRIPT_FETCHED = new Set(["XHR", "Fetch", "Script", "EventSource"]);
/** Answers kept for since() (a page that polls for minutes makes thousands). */
const MAX_ANSWERS = 2000;
/** Digests remembered: past this many, the oldest are forgotten (an answer seen that long ago counts as new). */
const MAX_DIGESTS = 20_000;

/** One answer to a script's request, and whether its bytes were new to the page. */
export interface NotedAnswer {
  url: string;
  /** Epoch ms when its body was read. */
  at: number;
  /** No answer of this page attempt had these bytes before. */
  novel: boolean;
}

/**
 * The answers to a page's script-made requests (XHR, fetch, scripts), each with whether the page had got the same
 * bytes before: a feed asked for more that answers with a batch it already gave has nothing more to give, and the
 * autoscroll (behaviors/autoscroll.ts) ends there instead of scrolling the same batch in until its deadline.
 */
export class AnswerNovelty {
  private readonly digests = new Set<string>();
  private readonly answers: NotedAnswer[] = [];

  /** A body read whole (in memory) for `url`, fetched as `resourceType`. */
  note(url: string, resourceType: string, bytes: Uint8Array): void {
    if (!SCRIPT_FETCHED.has(resourceType)) return;
    const digest = createHash("sha1").update(bytes).digest("base64");
    const novel = !this.digests.has(digest);
    if (novel) {
      this.digests.add(digest);
      if (this.digests.size > MAX_DIGESTS) this.digests.delete(this.digests.values().next().value!);
    }
    this.answers.push({ url, at: Date.now(), novel });
    if (this.answers.length > MAX_ANSWERS) this.answers.splice(0, this.answers.length - MAX_ANSWERS);
  }

  /** The answers whose bodies were read at or after `since` (epoch ms), oldest first. */
  since(since: number): NotedAnswer[] {
    return this.answers.filter((answer) => answer.at >= since);
  }
}
