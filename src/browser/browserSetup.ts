// What the browser and its tabs are set up with, as data: the options (config/) name these without
// importing the code that applies them (pageSetup.ts).
import type { Viewport } from "puppeteer-core";

/** Page-load events a navigation may wait for (puppeteer's `waitUntil`, browsertrix-crawler's --waitUntil). */
export const WAIT_UNTIL_EVENTS = ["load", "domcontentloaded", "networkidle0", "networkidle2"] as const;
export type WaitUntilEvent = (typeof WAIT_UNTIL_EVENTS)[number];

/** A device the tabs emulate (--mobileDevice): one of puppeteer's KnownDevices. */
export interface DeviceEmulation {
  name: string;
  userAgent: string;
  viewport: Viewport;
}

/** What the browser and each tab are set up with (--lang, --userAgentSuffix, --mobileDevice, --extraChromeArgs). */
export interface BrowserSetup {
  userAgent: string | null;
  userAgentSuffix: string | null;
  device: DeviceEmulation | null;
  /** A BCP-47 language tag, or null for Chromium's own. */
  lang: string | null;
  extraChromeArgs: readonly string[];
}
