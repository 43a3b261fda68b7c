import { startStaticSite } from "/work/main/dist/bench/lib/staticSite.js";
const site = await startStaticSite(process.argv[2]);
console.log(site.url);
setInterval(() => {}, 1 << 30);
