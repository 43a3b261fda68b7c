import { packageVersion } from "./util/packageRoot.js";

export const VERSION = packageVersion();
export const SOFTWARE = `warc-crawler ${VERSION} (Chromium via puppeteer-core, warcio.js)`;
