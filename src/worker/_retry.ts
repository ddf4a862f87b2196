/**
 * Riding out database outages: transient errors are retried with capped exponential backoff, and
 * a worker-wide tracker logs one warning when an outage starts and one info record when the
 * database answers again, however many calls failed in between.
 *
 * @module
 */

import { isTransientDatabaseError } from "../db/transient_error.ts";
import { describeError } from "./describe_error.ts";
import type { Logger } from "./logger.ts";

/** First retry delay after a transient error. */
const INITIAL_DELAY_MS = 100;
/** Longest delay between two retries. */
export const MAX_RETRY_DELAY_MS = 1000;

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** The delay before retry number `failures` (1-based): doubling from 100 ms up to 1 s, ±20 %. */
export function backoffDelay(failures: number): number {
  const base = Math.min(MAX_RETRY_DELAY_MS, INITIAL_DELAY_MS * 2 ** Math.min(failures - 1, 16));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** Tracks whether the database is currently unreachable, logging each streak once. */
export class OutageTracker {
  #logger: Logger;
  #since: number | null = null;
  #failures = 0;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Whether the last database call failed transiently. */
  get down(): boolean {
    return this.#since !== null;
  }

  /** Records a transient failure; the first of a streak is logged as a warning. */
  failed(operation: string, error: unknown): void {
    this.#failures++;
    if (this.#since !== null) return;
    this.#since = Date.now();
    this.#logger.warn("database unavailable: retrying with backoff", {
      operation,
      error: describeError(error),
    });
  }

  /** Records an answer from the database; ends a streak with one info record. */
  answered(): void {
    if (this.#since === null) return;
    this.#logger.info("database available again", {
      outage_ms: Date.now() - this.#since,
      failed_calls: this.#failures,
    });
    this.#since = null;
    this.#failures = 0;
  }
}

/** Options of {@linkcode retryTransient}. */
export interface RetryTransientOptions {
  /** Names the call in the outage warning. */
  operation: string;
  /** The worker's outage tracker. */
  outage: OutageTracker;
  /** Stops retrying: the last transient error is thrown. */
  signal?: AbortSignal;
}

/**
 * Calls `fn` until it succeeds or fails with a non-transient error (which is thrown), waiting
 * with backoff between attempts. Aborting `signal` ends the retries with the last error.
 */
export async function retryTransient<T>(
  fn: () => Promise<T>,
  options: RetryTransientOptions,
): Promise<T> {
  for (let failures = 1;; failures++) {
    try {
      const result = await fn();
      options.outage.answered();
      return result;
    } catch (error) {
      if (!isTransientDatabaseError(error)) {
        options.outage.answered();
        throw error;
      }
      options.outage.failed(options.operation, error);
      if (options.signal?.aborted) throw error;
      await sleep(backoffDelay(failures), options.signal);
      if (options.signal?.aborted) throw error;
    }
  }
}
