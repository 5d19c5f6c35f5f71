/**
 * The transport's one read of the wall clock (STYLE rule 2): an HTTP-date `Retry-After` is an
 * absolute time, so it needs `Date.now()`, not the balancer's monotonic clock.
 */
export const wallClock = (): number => Date.now();
