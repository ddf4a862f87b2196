// The concurrency limit of a step (docs/flow_control.md#concurrency-limits).

/**
 * A step's concurrency limit: at most `limit` of its tasks with the same key hold a slot at once
 * (a task holds one from the moment it is sent to its queue until it ends). A task over the limit
 * is held in the database, with no queue message, until a task of its key ends.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 *
 * const flow = new Flow<{ customerId: string }>({ slug: "sync" })
 *   .step({ slug: "call", concurrency: { limit: 2, key: "customerId" } }, (input) => input);
 * ```
 */
export interface ConcurrencyLimit {
  /** The most tasks of one key that hold a slot at once (integer >= 1). */
  readonly limit: number;
  /**
   * A dotted path into the run input whose value is the key (`"customerId"`,
   * `"customer.id"`); a run whose input lacks it counts under the shared key.
   *
   * @default {the start's `concurrencyKey`, else one limit shared by every run}
   */
  readonly key?: string;
}

/**
 * A step's rate limit: at most `limit` of its tasks with the same key begin their first attempt
 * in any window of `period` seconds, across every worker. Tasks over the limit wait in the
 * database and start when the window has room; none fails for it.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 *
 * const flow = new Flow<{ apiKey: string }>({ slug: "crawl" })
 *   .step({ slug: "fetch", rateLimit: { limit: 5, period: 1, key: "apiKey" } }, (input) => input);
 * ```
 */
export interface RateLimit {
  /** The most first attempts of one key per window (integer >= 1). */
  readonly limit: number;
  /** The window, in seconds (integer >= 1). */
  readonly period: number;
  /**
   * A dotted path into the run input whose value is the key, as for `ConcurrencyLimit.key`; a step
   * with both limits counts them under the same key.
   *
   * @default {the start's `concurrencyKey`, else one limit shared by every run}
   */
  readonly key?: string;
}
