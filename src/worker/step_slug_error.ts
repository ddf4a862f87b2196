/**
 * `StepSlugError`: a worker's `stepSlug` does not fit its flow.
 *
 * @module
 */

/**
 * What is wrong with a worker's `stepSlug`: `missing` (a step-queued flow needs one), `unknown`
 * (the flow has no such step), `not_step_queued` (a plain flow's worker runs every step and takes
 * none).
 *
 * @example Usage
 * ```ts
 * import type { StepSlugErrorReason } from "@sluice/sluice/worker";
 *
 * const reason: StepSlugErrorReason = "unknown";
 * ```
 */
export type StepSlugErrorReason = "missing" | "unknown" | "not_step_queued";

/**
 * The offending values of a {@linkcode StepSlugError}.
 *
 * @example Usage
 * ```ts
 * import type { StepSlugErrorDetails } from "@sluice/sluice/worker";
 *
 * const details: StepSlugErrorDetails = {
 *   reason: "unknown",
 *   flowSlug: "orders",
 *   stepSlug: "ship",
 *   stepSlugs: ["fetch", "charge"],
 * };
 * ```
 */
export interface StepSlugErrorDetails {
  /** What is wrong. */
  readonly reason: StepSlugErrorReason;
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The `stepSlug` option as given (`undefined` when missing). */
  readonly stepSlug: unknown;
  /** The step slugs of the flow, in step order: the valid values for a step-queued flow. */
  readonly stepSlugs: readonly string[];
}

/**
 * Thrown (before any database access) by `startWorker`, `createWorkerHandler` and `serveWorker`
 * when the `stepSlug` option does not fit the flow: missing or unknown for a flow returned by
 * `withStepQueues()`, or given for a plain flow. The type checker catches the same mistakes
 * where the slug is a literal.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import { StepSlugError } from "@sluice/sluice/worker";
 * import { resolveWorkerTarget } from "@sluice/sluice/admin";
 *
 * const flow = withStepQueues(new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1));
 * try {
 *   resolveWorkerTarget(flow, { stepSlug: "ship" as "fetch" });
 * } catch (error) {
 *   if (error instanceof StepSlugError) console.error(error.reason, error.stepSlugs); // unknown ["fetch"]
 * }
 * ```
 */
export class StepSlugError extends TypeError implements StepSlugErrorDetails {
  /** What is wrong. */
  readonly reason: StepSlugErrorReason;
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The `stepSlug` option as given. */
  readonly stepSlug: unknown;
  /** The step slugs of the flow, in step order. */
  readonly stepSlugs: readonly string[];

  /**
   * Creates the error.
   *
   * @param message The complete message.
   * @param details The offending values.
   */
  constructor(message: string, details: StepSlugErrorDetails) {
    super(message);
    this.name = "StepSlugError";
    this.reason = details.reason;
    this.flowSlug = details.flowSlug;
    this.stepSlug = details.stepSlug;
    this.stepSlugs = Object.freeze([...details.stepSlugs]);
  }
}
