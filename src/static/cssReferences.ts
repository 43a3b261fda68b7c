// What a stylesheet names: its @import targets and its url() values, read by a small tokenizer that follows
// CSS Syntax Level 3 (comments, strings, escapes, url-tokens), so a url() inside a comment or a string is not one.

import { requisiteUrl } from "./urlValues.js";

/** What a stylesheet names, absolute, fragments removed, each once in the order written. */
export interface CssReferences {
  /** @import "x" and @import url(x) targets: stylesheets. */
  imports: string[];
  /** Every other url() value (and image-set()'s bare strings). */
  urls: string[];
  /** The subset of `urls` written inside @font-face rules: fonts. */
  fonts: string[];
}

type Token =
  | { type: "ident" | "function" | "at" | "string" | "url"; value: string }
  | { type: "open" | "close" | "ws" | "semicolon" | "other"; value: string };

const isHex = (c: string) => /^[0-9a-fA-F]$/.test(c);
const isNameChar = (c: string) => /^[A-Za-z0-9_-]$/.test(c) || c.charCodeAt(0) >= 0x80;
const isNameStart = (c: string) => /^[A-Za-z_]$/.test(c) || c.charCodeAt(0) >= 0x80;
const isSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f";

/** The tokens of a stylesheet that matter for the URLs it names; comments are dropped. */
function tokenize(css: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const at = (offset = 0) => css[i + offset] ?? "";
  const validEscape = (offset = 0) => at(offset) === "\\" && at(offset + 1) !== "\n" && at(offset + 1) !== "";

  /** After a backslash: a hex code point (1 to 6 digits, one whitespace eaten) or the next character itself. */
  const escape = (): string => {
    i++;
    if (isHex(at())) {
      let hex = "";
      while (hex.length < 6 && isHex(at())) hex += css[i++];
      if (isSpace(at())) i++;
      const code = parseInt(hex, 16);
      return code === 0 || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) ? "\uFFFD" : String.fromCodePoint(code);
    }
    return css[i++] ?? "\uFFFD";
  };

  const startsName = (offset = 0) =>
    isNameStart(at(offset)) || validEscape(offset) || (at(offset) === "-" && (isNameStart(at(offset + 1)) || at(offset + 1) === "-" || validEscape(offset + 1)));

  const name = (): string => {
    let value = "";
    for (;;) {
      if (isNameChar(at())) value += css[i++];
      else if (validEscape()) value += escape();
      else return value;
    }
  };

  /** A quoted string; an unescaped newline ends it (a bad string: its value is not a URL). */
  const string = (quote: string): Token => {
    i++;
    let value = "";
    while (i < css.length) {
      const c = css[i]!;
      if (c === quote) {
        i++;
        return { type: "string", value };
      }
      if (c === "\n") return { type: "other", value };
      if (c === "\\") {
        if (at(1) === "\n") i += 2; // a line continuation
        else if (at(1) === "") i++;
        else value += escape();
      } else {
        value += c;
        i++;
      }
    }
    return { type: "string", value };
  };

  /** An unquoted url(: up to ")", whitespace only before it; quotes, "(" or stray characters make it a bad url. */
  const urlToken = (): Token => {
    let value = "";
    while (isSpace(at())) i++;
    while (i < css.length) {
      const c = css[i]!;
      if (c === ")") {
        i++;
        return { type: "url", value };
      }
      if (isSpace(c)) {
        while (isSpace(at())) i++;
        if (at() === ")" || at() === "") {
          i++;
          return { type: "url", value };
        }
        return badUrl();
      }
      if (c === '"' || c === "'" || c === "(") return badUrl();
      if (c === "\\") {
        if (!validEscape()) return badUrl();
        value += escape();
      } else {
        value += c;
        i++;
      }
    }
    return { type: "url", value };
  };

  const badUrl = (): Token => {
    while (i < css.length && css[i] !== ")") {
      if (validEscape()) escape();
      else i++;
    }
    i++;
    return { type: "other", value: "bad-url" };
  };

  while (i < css.length) {
    const c = css[i]!;
    if (c === "/" && at(1) === "*") {
      const end = css.indexOf("*/", i + 2);
      i = end < 0 ? css.length : end + 2;
    } else if (isSpace(c)) {
      while (isSpace(at())) i++;
      tokens.push({ type: "ws", value: " " });
    } else if (c === '"' || c === "'") {
      tokens.push(string(c));
    } else if (c === "@" && startsName(1)) {
      i++;
      tokens.push({ type: "at", value: name().toLowerCase() });
    } else if (startsName()) {
      const ident = name();
      if (at() !== "(") {
        tokens.push({ type: "ident", value: ident });
        continue;
      }
      i++;
      if (ident.toLowerCase() === "url") {
        // url( followed by a quote is a function whose argument is a string; otherwise a url-token.
        let ahead = 0;
        while (isSpace(at(ahead))) ahead++;
        if (at(ahead) !== '"' && at(ahead) !== "'") {
          tokens.push(urlToken());
          continue;
        }
      }
      tokens.push({ type: "function", value: ident.toLowerCase() });
    } else if (c === "\\" && validEscape()) {
      tokens.push({ type: "ident", value: name() });
    } else {
      i++;
      if (c === "(" || c === "{" || c === "[") tokens.push({ type: "open", value: c });
      else if (c === ")" || c === "}" || c === "]") tokens.push({ type: "close", value: c });
      else if (c === ";") tokens.push({ type: "semicolon", value: c });
      else tokens.push({ type: "other", value: c });
    }
  }
  return tokens;
}

/** Functions whose bare string arguments are image URLs. */
const IMAGE_SET_FUNCTIONS = new Set(["image-set", "-webkit-image-set"]);

/**
 * The stylesheet's @import targets and url() values, resolved against `baseUrl` (the stylesheet's own URL, or the
 * document's base URL for a <style> block or a style attribute). data:, blob:, javascript: and about: values and
 * values that are not URLs are skipped.
 */
export function cssReferences(css: string, baseUrl: string): CssReferences {
  const imports = new Set<string>();
  const urls = new Set<string>();
  const fonts = new Set<string>();
  // What each open bracket is: a function's name, "{" of a @font-face rule, or another bracket.
  const open: string[] = [];
  let pendingAtRule = "";
  let importing = false;

  const add = (value: string, asImport: boolean) => {
    const url = requisiteUrl(value, baseUrl);
    if (url === null) return;
    if (asImport) {
      imports.add(url);
      return;
    }
    urls.add(url);
    if (open.includes("font-face")) fonts.add(url);
  };

  for (const token of tokenize(css)) {
    switch (token.type) {
      case "at":
        pendingAtRule = token.value;
        // Only the first thing after @import names the stylesheet; what follows is layers, supports, media.
        importing = token.value === "import";
        continue;
      case "ws":
        continue;
      case "url":
        add(token.value, importing && open.length === 0);
        break;
      case "string": {
        const inside = open.at(-1);
        if (importing && open.length === 0) add(token.value, true);
        else if (inside === "url") add(token.value, importing && open.length === 1);
        else if (inside !== undefined && IMAGE_SET_FUNCTIONS.has(inside)) add(token.value, false);
        break;
      }
      case "function":
        open.push(token.value);
        // @import url("x") names the stylesheet; url() is the only function that does.
        if (token.value === "url" && importing && open.length === 1) continue;
        break;
      case "open":
        open.push(token.value === "{" && pendingAtRule === "font-face" ? "font-face" : token.value);
        pendingAtRule = "";
        break;
      case "close":
        open.pop();
        if (importing && open.length === 0 && token.value === ")") continue;
        break;
      case "semicolon":
        pendingAtRule = "";
        break;
      default:
        break;
    }
    importing = false;
  }
  return { imports: [...imports], urls: [...urls], fonts: [...fonts] };
}
