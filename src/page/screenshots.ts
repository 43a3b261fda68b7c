import type { CDPSession } from "puppeteer-core";

/** browsertrix-crawler's --screenshot kinds; each becomes a `urn:<kind>:<page url>` resource record. */
export const SCREENSHOT_KINDS = ["view", "thumbnail", "fullPage"] as const;
export type ScreenshotKind = (typeof SCREENSHOT_KINDS)[number];

export interface Screenshot {
  kind: ScreenshotKind;
  contentType: "image/png" | "image/jpeg";
  bytes: Buffer;
}

/** Thumbnails are 16:9 and this wide, as browsertrix-crawler's (640x360). */
export const THUMBNAIL_WIDTH = 640;
const THUMBNAIL_QUALITY = 75;

/**
 * Take one screenshot through the tab's DevTools session (not puppeteer's page.screenshot, which
 * serializes screenshots of all tabs behind one lock: a screenshot that hangs would stall every tab).
 *  - view: the viewport as the page shows after loading, PNG;
 *  - thumbnail: the top 16:9 part of the viewport scaled down to 640 px wide, JPEG;
 *  - fullPage: the whole scrollable page, PNG.
 */
export async function takeScreenshot(cdp: CDPSession, kind: ScreenshotKind): Promise<Screenshot> {
  switch (kind) {
    case "view": {
      const { data } = await cdp.send("Page.captureScreenshot", { format: "png" });
      return { kind, contentType: "image/png", bytes: Buffer.from(data, "base64") };
    }
    case "thumbnail": {
      const { cssVisualViewport: view } = await cdp.send("Page.getLayoutMetrics");
      const width = view.clientWidth;
      const height = Math.min(view.clientHeight, Math.round((width * 9) / 16));
      const { data } = await cdp.send("Page.captureScreenshot", {
        format: "jpeg",
        quality: THUMBNAIL_QUALITY,
        clip: { x: view.pageX, y: view.pageY, width, height, scale: THUMBNAIL_WIDTH / width },
      });
      return { kind, contentType: "image/jpeg", bytes: Buffer.from(data, "base64") };
    }
    case "fullPage": {
      const { cssContentSize: content, cssVisualViewport: view } = await cdp.send("Page.getLayoutMetrics");
      const { data } = await cdp.send("Page.captureScreenshot", {
        format: "png",
        captureBeyondViewport: true,
        clip: { x: 0, y: 0, width: Math.max(content.width, view.clientWidth), height: Math.max(content.height, view.clientHeight), scale: 1 },
      });
      return { kind, contentType: "image/png", bytes: Buffer.from(data, "base64") };
    }
  }
}
