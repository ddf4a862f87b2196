/**
 * `RetryAfterError`: a handler's way to choose when its task is retried.
 *
 * @module
 */

/**
 * The longest retry delay a handler may choose, in seconds (one day); mirrors
 * `sluice.max_retry_delay_seconds()`.
 *
 * @example Usage
 * ```ts
 * import { MAX_RETRY_DELAY_SECONDS } from "@sluice/sluice/worker";
 *
 * console.log(MAX_RETRY_DELAY_SECONDS); // 86400
 * ```
 */
export const MAX_RETRY_DELAY_SECONDS = 86400;

/**
 * Options of {@linkcode RetryAfterError}.
 *
 * @example Usage
 * ```ts
 * import type { RetryAfterErrorOptions } from "@sluice/sluice/worker";
 *
 * const options: RetryAfterErrorOptions = { cause: new Error("HTTP 429") };
 * ```
 */
export interface RetryAfterErrorOptions {
  /** The underlying failure; its message becomes part of this error's message. */
  readonly cause?: unknown;
}

/**
 * Thrown by a step handler to fail the current attempt and have the next one start after
 * `delaySeconds` instead of the exponential backoff. It counts as a failed attempt: when no
 * attempts are left, the task fails as usual.
 *
 * The delay must be a finite number of seconds from 0 to {@linkcode MAX_RETRY_DELAY_SECONDS}
 * (fractions round up to whole seconds). The worker checks it before reporting: an invalid delay
 * fails the attempt with the normal backoff and an error message naming the value.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 * import { RetryAfterError } from "@sluice/sluice/worker";
 *
 * const flow = new Flow<{ url: string }>({ slug: "poll_api", maxAttempts: 5 })
 *   .step({ slug: "fetch" }, async (input) => {
 *     const response = await fetch(input.url);
 *     if (response.status === 429) {
 *       const after = Number(response.headers.get("retry-after") ?? 30);
 *       throw new RetryAfterError(after, { cause: new Error("rate limited (HTTP 429)") });
 *     }
 *     return await response.text();
 *   });
 * ```
 */
export class RetryAfterError extends Error {
  /** Always `"RetryAfterError"`. */
  override name = "RetryAfterError";
  /** Seconds until the next attempt, as given. */
  readonly delaySeconds: number;

  /**
   * Creates the error.
   *
   * @param delaySeconds Seconds until the next attempt (0 to 86400).
   * @param options The cause of the failure.
   */
  constructor(delaySeconds: number, options: RetryAfterErrorOptions = {}) {
    const reason = options.cause instanceof Error
      ? `: ${options.cause.message}`
      : options.cause === undefined
      ? ""
      : `: ${String(options.cause)}`;
    super(`Retry requested in ${String(delaySeconds)} s${reason}`, { cause: options.cause });
    this.delaySeconds = delaySeconds;
  }
}
