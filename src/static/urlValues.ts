// How an attribute's or a stylesheet's value becomes the URL a browser would fetch.

/**
 * The absolute URL `value` names against `baseUrl`, fragment removed, or null when a browser fetches nothing for
 * it: empty, not a URL, or not http(s) (data:, blob:, javascript:, about:, mailto: ...).
 */
export function requisiteUrl(value: string, baseUrl: string): string | null {
  // HTML strips ASCII whitespace around URL attributes before parsing them.
  const trimmed = value.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "");
  if (!trimmed) return null;
  let url: URL;
  try {
    url = new URL(trimmed, baseUrl);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  url.hash = "";
  return url.href;
}

/**
 * Every URL of a srcset attribute, by the HTML standard's parsing of image candidate strings: a URL runs to the
 * next whitespace (trailing commas end it), its descriptors to the next comma outside parentheses. So a comma
 * inside a URL (`a,b.png 1x`) is part of it.
 */
export function srcsetCandidates(srcset: string): string[] {
  const urls: string[] = [];
  let i = 0;
  const isSpace = (c: string | undefined) => c === " " || c === "\t" || c === "\n" || c === "\r" || c === "\f";
  while (i < srcset.length) {
    while (i < srcset.length && (isSpace(srcset[i]) || srcset[i] === ",")) i++;
    if (i >= srcset.length) break;
    const start = i;
    while (i < srcset.length && !isSpace(srcset[i])) i++;
    const url = srcset.slice(start, i);
    if (url.endsWith(",")) {
      urls.push(url.replace(/,+$/, ""));
      continue;
    }
    urls.push(url);
    // Descriptors: up to a comma that is not inside parentheses.
    let depth = 0;
    while (i < srcset.length) {
      const c = srcset[i]!;
      if (c === "(") depth++;
      else if (c === ")" && depth > 0) depth--;
      else if (c === "," && depth === 0) break;
      i++;
    }
    i++;
  }
  return urls.filter((url) => url !== "");
}
