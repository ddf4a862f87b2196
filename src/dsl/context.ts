/**
 * The context a step handler receives as its second argument.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";

/**
 * The second argument of every step handler.
 *
 * @typeParam Input The flow input type.
 * @typeParam Slug The slug of the step the handler belongs to.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 *
 * new Flow<{ userId: number }>({ slug: "welcome" })
 *   .step({ slug: "load" }, async (input, ctx) => {
 *     ctx.signal.throwIfAborted();
 *     const rows = await ctx.sql`select name from users where id = ${input.userId}`;
 *     return { name: String(rows[0]?.name), attempt: ctx.attempt };
 *   });
 * ```
 */
export interface StepContext<Input = unknown, Slug extends string = string> {
  /** A postgres.js client from the worker's pool. */
  readonly sql: Sql;
  /** The worker's environment variables. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Aborted when the task times out, the worker shuts down, or the attempt is no longer live: its
   * run was cancelled (`cancelRun`), or the task was requeued or retried meanwhile. The worker
   * learns of a cancellation at its next heartbeat, so at most one `heartbeatIntervalMs`
   * (default 5 s) after the cancel commits; the signal's `reason` then says why.
   */
  readonly signal: AbortSignal;
  /** The concrete slug of the flow the run belongs to. */
  readonly flowSlug: string;
  /** The run's input. */
  readonly flowInput: Input;
  /** The run id (a UUID). */
  readonly runId: string;
  /** The slug of this step. */
  readonly stepSlug: Slug;
  /** Zero-based index of this task: the array element of a map step, `0` otherwise. */
  readonly taskIndex: number;
  /**
   * One-based attempt number of this task. It keeps counting across retries of the run
   * (`retryRun`): after a task's first round of 3 attempts, the next round's are 4, 5 and 6.
   */
  readonly attempt: number;
  /**
   * The number of this round's last attempt: the step's effective `maxAttempts` (the step's
   * option, else the flow's), plus the attempts of earlier rounds when the run was retried, as the
   * database applies it when this attempt fails or stalls: `attempt === maxAttempts` is the last
   * attempt.
   * A stalled last attempt never reaches its handler's end, so code that must run when a task is
   * exhausted belongs in a step that depends on it under `whenExhausted: "skip"`.
   */
  readonly maxAttempts: number;
}
