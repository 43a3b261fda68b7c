import type { HostileRoutes } from "./route.js";

/** Hostile routes: pacing. */
export const pacingRoutes: HostileRoutes = {};
