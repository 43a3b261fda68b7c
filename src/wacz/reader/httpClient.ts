// What the WACZ reader needs of undici, loaded by byteSources.ts only when a WACZ is read over HTTP. Through this
// module rather than import("undici") itself: in the programs' bundles a library loaded on demand keeps only its
// default export, a module of ours its names.
import { Agent, interceptors, request } from "undici";

export const undici = { Agent, interceptors, request };
export type Undici = typeof undici;
