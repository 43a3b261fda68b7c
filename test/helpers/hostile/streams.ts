import type { HostileRoutes } from "./route.js";

/** Hostile routes: streams. */
export const streamsRoutes: HostileRoutes = {};
