/**
 * The media files a loaded page loads by itself, in all its frames (read with its links: linkExtract.ts): a
 * media element may not have asked for its file by the time the page is done (it loads later), and what is
 * not asked for by then would never be archived.
 */

/** Runs in the page (self-contained: its text is sent): the http(s) sources of its <video> and <audio> elements that load by themselves (a blob: or data: source is none). */
export function mediaInDocument(): string[] {
  const found = new Set<string>();
  for (const media of Array.from(document.querySelectorAll("video, audio")) as HTMLMediaElement[]) {
    // preload="none" without autoplay: the page itself never loads it (the autoplay behavior plays it).
    if (media.preload === "none" && !media.autoplay) continue;
    const sources = [media.currentSrc, media.getAttribute("src") ?? "", ...Array.from(media.querySelectorAll("source[src]")).map((s) => s.getAttribute("src") ?? "")];
    for (const source of sources) {
      try {
        const url = new URL(source, document.baseURI);
        if (source && (url.protocol === "http:" || url.protocol === "https:")) found.add(url.href);
      } catch {
        // not a URL
      }
    }
  }
  return [...found];
}
