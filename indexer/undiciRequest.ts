// undici's request, loaded by sources.ts only for a manifest or WACZ given by URL. Through this module rather
// than import("undici") itself: in the programs' bundles a library loaded on demand keeps only its default
// export, a module of ours its names.
export { request } from "undici";
