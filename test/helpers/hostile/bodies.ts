import type { HostileRoutes } from "./route.js";

/** Hostile routes: bodies. */
export const bodiesRoutes: HostileRoutes = {};
