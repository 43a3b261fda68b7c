/**
 * Players that wait for a click: a poster image or a big play button whose click handler creates the
 * <video> and its player (many news and museum sites load the player only then). The library's autoplay
 * plays media elements that exist; this presses such controls first, once each, so there is one to play.
 * Controls inside a link or a form are left alone: their click would leave the page or submit it.
 *
 * Evaluated in the page (puppeteer serializes it): self-contained, no imports or outer names.
 * @returns how many controls were pressed.
 */
export function pressPlayControls(): number {
  const CONTROLS = [
    ".video-poster", "[class*='video-poster' i]", "[class*='poster' i][role='button']", "[class*='play-button' i]", "[class*='playbutton' i]",
    "button[aria-label*='play' i]", "[role='button'][aria-label*='play' i]", ".vjs-big-play-button", ".plyr__control--overlaid",
    ".jw-display-icon-container", ".ytp-large-play-button", ".mejs__overlay-play", ".fp-play",
  ].join(", ");
  const pressed = Symbol.for("warc-crawler.media.pressed");
  let count = 0;
  for (const control of Array.from(document.querySelectorAll<HTMLElement>(CONTROLS))) {
    const marked = control as HTMLElement & { [key: symbol]: boolean };
    if (marked[pressed] || control.closest("a[href], form") || !control.getClientRects().length) continue;
    // A control of a player already playing (or of one just pressed, nested) needs no press.
    const media = control.closest("figure, [class*='player' i], [class*='video' i]")?.querySelector<HTMLMediaElement>("video, audio");
    if (media && !media.paused) continue;
    marked[pressed] = true;
    control.click();
    count += 1;
  }
  return count;
}
