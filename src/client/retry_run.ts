/**
 * `retryRun()`: resume a failed (or cancelled) run from where it stopped.
 *
 * @module
 */

import type { Queryable } from "../db/driver/postgres.ts";
import { retryRunRow } from "../db/client_queries.ts";
import { assertUuid } from "../dsl/uuid.ts";
import { RunNotFoundError, RunWorkersMissingError } from "./errors.ts";
import { flowAccessErrorOf } from "./_flow_access.ts";
import type { RunStatus } from "./get_run.ts";

/**
 * Options of {@linkcode retryRun}.
 *
 * @example Usage
 * ```ts
 * import type { RetryRunOptions } from "@sluice/sluice";
 *
 * const options: RetryRunOptions = { force: true };
 * ```
 */
export interface RetryRunOptions {
  /**
   * Retry even when a step the retry starts again has no live worker of the run's flow: its tasks
   * wait in the queue until one starts.
   *
   * @default {false}
   */
  readonly force?: boolean;
}

/**
 * What {@linkcode retryRun} did.
 *
 * @example Usage
 * ```ts
 * import type { RetryRunResult } from "@sluice/sluice";
 *
 * const resumed = (result: RetryRunResult) => result.outcome === "retried";
 * ```
 */
export interface RetryRunResult {
  /** The run id. */
  readonly runId: string;
  /**
   * `retried`: the run goes on. `unchanged`: it was not failed or cancelled (see `status`), so
   * nothing changed.
   */
  readonly outcome: "retried" | "unchanged";
  /**
   * The run's status now: `started` after a retry (or `failed` again when a step fails at once,
   * such as an unmet condition with `whenUnmet: "fail"`), else the status it had.
   */
  readonly status: RunStatus;
  /** How often the run has been retried, this call included. */
  readonly retryCount: number;
  /** How many tasks this call requeued. */
  readonly tasks: number;
  /** How many steps this call started again (or set waiting for their dependencies again). */
  readonly steps: number;
}

/**
 * Retries a failed or cancelled run from where it stopped, on the concrete flow it started on
 * (never another version an alias now points at). Every step that failed or was cancelled goes
 * on: a map keeps its completed elements and re-executes only the failed and cancelled ones; a
 * step that never started waits for its dependencies again. Completed steps keep their outputs
 * and do not run again. Requeued tasks continue their attempt numbers (a late report of an
 * earlier attempt stays stale) and get the step's `maxAttempts` again for this round. The run
 * records the retry (`retryCount`, `retriedAt`, `retriedBy`: the database role) and announces it
 * with a `run:retried` event. A run that is started or completed is left as it was (`outcome:
 * "unchanged"`).
 *
 * @param sql The database client, or a transaction.
 * @param runId The run id.
 * @param options `force`: retry even without live workers.
 * @returns What the call did and the run's status.
 * @throws {TypeError} When `runId` is not a UUID.
 * @throws {RunNotFoundError} When no run has the id (it is deleted with its flow).
 * @throws {RunWorkersMissingError} Without `force`, when a step to start again has no live worker
 *   of the run's flow; nothing changed.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, retryRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const result = await retryRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11");
 * console.log(result.outcome, result.retryCount); // retried 1
 * ```
 */
export async function retryRun(
  sql: Queryable,
  runId: string,
  options: RetryRunOptions = {},
): Promise<RetryRunResult> {
  const action = `Cannot retry run ${runId}`;
  assertUuid(runId, "Cannot retry run");
  try {
    const row = await retryRunRow(sql, runId, options.force === true);
    return {
      runId: row.run_id,
      outcome: row.outcome,
      status: row.status as RunStatus,
      retryCount: row.retry_count,
      tasks: row.tasks,
      steps: row.steps,
    };
  } catch (error) {
    const { code, detail, message } = error as {
      code?: unknown;
      detail?: unknown;
      message?: unknown;
    };
    if (code === "P0002") throw new RunNotFoundError(action, runId, { cause: error });
    const refused = flowAccessErrorOf(error);
    if (refused !== undefined) throw refused;
    if (code === "SLR01" && typeof detail === "string" && typeof message === "string") {
      const routes = JSON.parse(detail) as { step_slug: string; queue_name: string }[];
      throw new RunWorkersMissingError(message, {
        runId,
        missingRoutes: routes.map((route) => ({
          stepSlug: route.step_slug,
          queueName: route.queue_name,
        })),
      });
    }
    throw error;
  }
}
