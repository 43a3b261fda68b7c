import { OptionsError } from "../optionsError.js";

/**
 * The `CRAWL_ARGS` environment variable (how the Browsertrix service passes its crawler flags): its words
 * come after the command line's, as browsertrix-crawler appends them.
 */
export function withCrawlArgs(args: string[], env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = env.CRAWL_ARGS;
  if (!extra || !extra.trim()) return args;
  try {
    return [...args, ...splitShellWords(extra)];
  } catch (err) {
    throw new OptionsError(`CRAWL_ARGS: ${(err as Error).message}`);
  }
}

/**
 * Split a string into words as a POSIX shell would, without expanding anything: blanks separate words,
 * '...' is literal, "..." keeps blanks (a backslash escapes " \ $ and ` in it), a backslash outside quotes
 * escapes the next character; quoted parts next to other text join it (--title="My crawl").
 */
export function splitShellWords(text: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (/\s/.test(ch)) {
      if (word !== null) words.push(word);
      word = null;
      i++;
    } else if (ch === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error("unterminated ' quote");
      word = (word ?? "") + text.slice(i + 1, end);
      i = end + 1;
    } else if (ch === '"') {
      let part = "";
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\" && i + 1 < text.length && '"\\$`'.includes(text[i + 1])) i++;
        part += text[i++];
      }
      if (i >= text.length) throw new Error('unterminated " quote');
      word = (word ?? "") + part;
      i++;
    } else if (ch === "\\" && i + 1 < text.length) {
      word = (word ?? "") + text[i + 1];
      i += 2;
    } else {
      word = (word ?? "") + ch;
      i++;
    }
  }
  if (word !== null) words.push(word);
  return words;
}
