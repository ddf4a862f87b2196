/**
 * `getRunTasks()`: every task of a run with its attempts, status and last error, so a producer
 * can show why a run failed without SQL.
 *
 * @module
 */

import { readRunTasks } from "../db/client_queries.ts";
import type { Queryable } from "../db/driver/postgres.ts";
import { assertUuid } from "../dsl/uuid.ts";

/**
 * A task's status: `queued` (waiting in its queue, also between retries), `started` (a worker
 * holds it), or one of the terminal ones.
 *
 * @example Usage
 * ```ts
 * import type { TaskStatus } from "@sluice/sluice";
 *
 * const status: TaskStatus = "queued";
 * ```
 */
export type TaskStatus = "queued" | "started" | "completed" | "failed" | "skipped" | "cancelled";

/**
 * One task of a run: the single task of a step, or one element of a map step.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, getRunTasks, type TaskState } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const tasks: TaskState[] = await getRunTasks(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * ```
 */
export interface TaskState {
  /** The step slug. */
  readonly stepSlug: string;
  /** The task's index within its step (the element index of a map step). */
  readonly taskIndex: number;
  /** The task's status. */
  readonly status: TaskStatus;
  /** Attempts started so far (a failed attempt that is retried leaves the task `queued`). */
  readonly attempts: number;
  /** Times the task was requeued because its worker vanished mid-attempt. */
  readonly stalledRequeues: number;
  /** The error of the last failed attempt (kept after a later attempt succeeds). */
  readonly lastError: string | null;
  /** The queue the task's messages go through. */
  readonly queueName: string;
  /** When the task was queued. */
  readonly queuedAt: Date;
  /** When its last attempt started. */
  readonly startedAt: Date | null;
  /** When it completed, failed, was skipped or cancelled. */
  readonly finishedAt: Date | null;
}

/**
 * Reads every task of a run, in step order then task index.
 *
 * @param sql The database client, or a transaction (`sql.begin(async (tx) => ...)`).
 * @param runId The run id.
 * @returns The tasks; empty when no run has that id (or none of its steps has started).
 * @throws {TypeError} When `runId` is not a UUID.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, getRunTasks } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * for (const task of await getRunTasks(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11")) {
 *   if (task.lastError !== null) {
 *     console.log(`${task.stepSlug}[${task.taskIndex}] attempt ${task.attempts}: ${task.lastError}`);
 *   }
 * }
 * ```
 */
export async function getRunTasks(sql: Queryable, runId: string): Promise<TaskState[]> {
  assertUuid(runId, "Cannot get the tasks of run");
  const rows = await readRunTasks(sql, runId);
  return rows.map((row) => ({
    stepSlug: row.step_slug,
    taskIndex: row.task_index,
    status: row.status as TaskStatus,
    attempts: row.attempts_count,
    stalledRequeues: row.requeued_count,
    lastError: row.error_message,
    queueName: row.queue_name,
    queuedAt: row.queued_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  }));
}
