/**
 * `getRun()`: a run and the state of each of its steps.
 *
 * @module
 */

import type { Queryable } from "../db/driver/postgres.ts";
import { readRun } from "../db/client_queries.ts";
import type { Json } from "../dsl/json.ts";
import type { SkipReason } from "../events/run_event.ts";
import { assertUuid } from "../dsl/uuid.ts";

/**
 * A run's status: `started` until every step is resolved, then `completed` or `failed`; or
 * `cancelled` by `cancelRun`. A failed or cancelled run goes back to `started` when retried
 * (`retryRun`).
 *
 * @example Usage
 * ```ts
 * import type { RunStatus } from "@sluice/sluice";
 *
 * const status: RunStatus = "completed";
 * ```
 */
export type RunStatus = "started" | "completed" | "failed" | "cancelled";

/**
 * A step's status within a run: `waiting` is a wait step (`.sleep()`, `.waitForSignal()`,
 * docs/waits.md) waiting in the database for its due time or signal.
 *
 * @example Usage
 * ```ts
 * import type { StepStatus } from "@sluice/sluice";
 *
 * const status: StepStatus = "skipped";
 * ```
 */
export type StepStatus =
  | "created"
  | "started"
  | "waiting"
  | "completed"
  | "failed"
  | "skipped"
  | "cancelled";

/**
 * One step of a run.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, getRun, type StepState } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const run = await getRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * const failed: StepState[] = run?.steps.filter((step) => step.status === "failed") ?? [];
 * ```
 */
export interface StepState {
  /** The step slug. */
  readonly stepSlug: string;
  /** The step's status. */
  readonly status: StepStatus;
  /** Dependencies not resolved yet. */
  readonly remainingDeps: number;
  /** Tasks the step started with (`null` until it starts). */
  readonly initialTasks: number | null;
  /** Tasks not completed yet (`null` until it starts). */
  readonly remainingTasks: number | null;
  /** The step output once completed (an array for a map step). */
  readonly output: Json | null;
  /** Why it was skipped, for a skipped step. */
  readonly skipReason: SkipReason | null;
  /** The last error, for a failed step or one skipped after its retries ran out. */
  readonly errorMessage: string | null;
  /** When the step state was created (with the run). */
  readonly createdAt: Date;
  /** When the step's tasks were queued. */
  readonly startedAt: Date | null;
  /** When the step completed. */
  readonly completedAt: Date | null;
  /** When the step failed. */
  readonly failedAt: Date | null;
  /** When the step was skipped. */
  readonly skippedAt: Date | null;
  /** When the step was cancelled (its run failed or was cancelled). */
  readonly cancelledAt: Date | null;
  /**
   * A signal wait's key (`sendSignal` with it releases the step), set when its dependency
   * completed; `null` for a sleep, a handler step, or a wait whose dependency has not completed.
   */
  readonly waitKey: string | null;
  /**
   * When a sleep is due or a signal wait times out, set when the wait started (or, for a sleep
   * given a `Date`, when its dependency completed); `null` for a signal wait without a timeout,
   * a handler step, or a wait not started yet.
   */
  readonly waitUntil: Date | null;
  /** When the wait step started waiting (it has no `startedAt`: it queues no task). */
  readonly waitingAt: Date | null;
}

/**
 * A run with its step states (in step order).
 *
 * @typeParam Input The run input type.
 * @typeParam Output The run output type.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, getRun, type RunState } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const run: RunState | null = await getRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * console.log(run?.status, run?.steps.map((step) => `${step.stepSlug}=${step.status}`));
 * ```
 */
export interface RunState<Input = Json, Output = Json> {
  /** The run id. */
  readonly runId: string;
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The name the run was started with (an alias or the concrete slug). */
  readonly startedVia: string;
  /** The run's status. */
  readonly status: RunStatus;
  /** The run input. */
  readonly input: Input;
  /** The outputs of the completed leaf steps keyed by slug, once completed. */
  readonly output: Output | null;
  /** Why the run failed. */
  readonly errorMessage: string | null;
  /** Steps not resolved yet. */
  readonly remainingSteps: number;
  /** When the run was started. */
  readonly startedAt: Date;
  /** When the run completed. */
  readonly completedAt: Date | null;
  /** When the run failed. */
  readonly failedAt: Date | null;
  /** When the run was cancelled. */
  readonly cancelledAt: Date | null;
  /** Why the run was cancelled (`null`: no reason given, or not cancelled). */
  readonly cancelReason: string | null;
  /** The database role that cancelled the run. */
  readonly cancelledBy: string | null;
  /** How often the run was retried (`retryRun`). */
  readonly retryCount: number;
  /** When the run was last retried. */
  readonly retriedAt: Date | null;
  /** The database role that last retried the run. */
  readonly retriedBy: string | null;
  /** The steps, in definition order. */
  readonly steps: readonly StepState[];
}

/**
 * Reads a run and its step states in one consistent snapshot.
 *
 * @typeParam Input The run input type (not checked).
 * @typeParam Output The run output type (not checked).
 * @param sql The database client, or a transaction (`sql.begin(async (tx) => ...)`).
 * @param runId The run id.
 * @returns The run, or `null` when no run has that id.
 * @throws {TypeError} When `runId` is not a UUID.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, getRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const run = await getRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * if (run?.status === "failed") console.error(run.errorMessage);
 * ```
 */
export async function getRun<Input = Json, Output = Json>(
  sql: Queryable,
  runId: string,
): Promise<RunState<Input, Output> | null> {
  assertUuid(runId, "Cannot get run");
  const run = await readRun(sql, runId);
  if (run === null) return null;
  return {
    runId: run.run_id,
    flowSlug: run.flow_slug,
    startedVia: run.started_via,
    status: run.status as RunStatus,
    input: run.input as Input,
    output: run.output as Output | null,
    errorMessage: run.error_message,
    remainingSteps: run.remaining_steps,
    startedAt: run.started_at,
    completedAt: run.completed_at,
    failedAt: run.failed_at,
    cancelledAt: run.cancelled_at,
    cancelReason: run.cancel_reason,
    cancelledBy: run.cancelled_by,
    retryCount: run.retry_count,
    retriedAt: run.retried_at,
    retriedBy: run.retried_by,
    steps: run.steps.map((step) => ({
      stepSlug: step.step_slug,
      status: step.status as StepStatus,
      remainingDeps: step.remaining_deps,
      initialTasks: step.initial_tasks,
      remainingTasks: step.remaining_tasks,
      output: step.output as Json | null,
      skipReason: step.skip_reason as SkipReason | null,
      errorMessage: step.error_message,
      createdAt: new Date(step.created_at),
      startedAt: toDate(step.started_at),
      completedAt: toDate(step.completed_at),
      failedAt: toDate(step.failed_at),
      skippedAt: toDate(step.skipped_at),
      cancelledAt: toDate(step.cancelled_at),
      waitKey: step.wait_key,
      waitUntil: toDate(step.wait_until),
      waitingAt: toDate(step.waiting_at),
    })),
  };
}

function toDate(value: string | null): Date | null {
  return value === null ? null : new Date(value);
}
