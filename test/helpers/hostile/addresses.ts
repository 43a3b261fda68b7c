import type { HostileRoutes } from "./route.js";

/** Hostile routes: addresses. */
export const addressesRoutes: HostileRoutes = {};
