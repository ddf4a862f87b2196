/**
 * `cancelRun()` and `cancelRuns()`: stop runs that should not finish.
 *
 * @module
 */

import type { Queryable } from "../db/driver/postgres.ts";
import { cancelRunRow, cancelRunsRow } from "../db/client_queries.ts";
import { assertUuid } from "../dsl/uuid.ts";
import { RunNotFoundError } from "./errors.ts";
import { flowAccessErrorOf } from "./_flow_access.ts";
import type { RunStatus } from "./get_run.ts";

/**
 * Options of {@linkcode cancelRun}.
 *
 * @example Usage
 * ```ts
 * import type { CancelRunOptions } from "@sluice/sluice";
 *
 * const options: CancelRunOptions = { reason: "the customer withdrew the order" };
 * ```
 */
export interface CancelRunOptions {
  /**
   * Why the run is cancelled: stored on the run (at most 1,000 characters), carried by its
   * `run:cancelled` event and by the `reason` of its handlers' aborted signals.
   *
   * @default {null}
   */
  readonly reason?: string | null;
}

/**
 * What {@linkcode cancelRun} did.
 *
 * @example Usage
 * ```ts
 * import type { CancelRunResult } from "@sluice/sluice";
 *
 * const done = (result: CancelRunResult) => result.outcome === "cancelled";
 * ```
 */
export interface CancelRunResult {
  /** The run id. */
  readonly runId: string;
  /**
   * `cancelled`: this call cancelled the run. `unchanged`: the run had already ended (see
   * `status`), so nothing changed; cancelling twice is harmless.
   */
  readonly outcome: "cancelled" | "unchanged";
  /** The run's status now: `cancelled`, or the `completed`/`failed` it ended with before. */
  readonly status: RunStatus;
  /** How many queued and running tasks this call cancelled. */
  readonly tasks: number;
  /** The cancel's reason as stored (the first cancel's, for a run cancelled before). */
  readonly reason: string | null;
  /** When the run was cancelled (`null` when it ended otherwise). */
  readonly cancelledAt: Date | null;
}

/**
 * Cancels a started run: it ends `cancelled` with `reason`; its queued tasks (also those waiting
 * out a retry delay) are cancelled and their messages archived; its running tasks are cancelled
 * too, which fences their attempts (a late report is stale and changes nothing), and each handler's
 * `signal` aborts when its worker next heartbeats (within `heartbeatIntervalMs`, 5 s by
 * default); no step that had not started ever starts. Events: `step:cancelled` per unfinished
 * step, then `run:cancelled`. A run that already ended is left as it was (`outcome:
 * "unchanged"`). Runs on a transaction too: the cancel commits with the caller's writes.
 *
 * @param sql The database client, or a transaction.
 * @param runId The run id.
 * @param options The reason.
 * @returns What the call did and the run's status.
 * @throws {TypeError} When `runId` is not a UUID.
 * @throws {RunNotFoundError} When no run has the id.
 *
 * @example Usage
 * ```ts ignore
 * import { cancelRun, connect } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const result = await cancelRun(sql, "6f1c0c2e-8f5e-4a43-9d43-2f7f6a0f0d11", {
 *   reason: "duplicate order",
 * });
 * console.log(result.outcome, result.status); // cancelled cancelled
 * ```
 */
export async function cancelRun(
  sql: Queryable,
  runId: string,
  options: CancelRunOptions = {},
): Promise<CancelRunResult> {
  const action = `Cannot cancel run ${runId}`;
  assertUuid(runId, "Cannot cancel run");
  const reason = options.reason ?? null;
  if (reason !== null && typeof reason !== "string") {
    throw new TypeError(`${action}: reason must be a string or null, got ${typeof reason}`);
  }
  try {
    const row = await cancelRunRow(sql, runId, reason);
    return {
      runId: row.run_id,
      outcome: row.outcome,
      status: row.status as RunStatus,
      tasks: row.tasks,
      reason: row.reason,
      cancelledAt: row.cancelled_at === null ? null : new Date(row.cancelled_at),
    };
  } catch (error) {
    if ((error as { code?: unknown }).code === "P0002") {
      throw new RunNotFoundError(action, runId, { cause: error });
    }
    throw flowAccessErrorOf(error) ?? error;
  }
}

/**
 * Options of {@linkcode cancelRuns}.
 *
 * @example Usage
 * ```ts
 * import type { CancelRunsOptions } from "@sluice/sluice/admin";
 *
 * const options: CancelRunsOptions = { reason: "bad deploy", startedBefore: new Date() };
 * ```
 */
export interface CancelRunsOptions extends CancelRunOptions {
  /**
   * Only runs started through this name (an alias, or the concrete slug).
   *
   * @default {null (any)}
   */
  readonly startedVia?: string | null;
  /**
   * Only runs started before this time.
   *
   * @default {null (any)}
   */
  readonly startedBefore?: Date | null;
  /**
   * At most this many runs per call (1 to 10,000), oldest first.
   *
   * @default {500}
   */
  readonly batchSize?: number;
}

/**
 * What one {@linkcode cancelRuns} call did.
 *
 * @example Usage
 * ```ts
 * import type { CancelRunsResult } from "@sluice/sluice/admin";
 *
 * const again = (result: CancelRunsResult) => result.more;
 * ```
 */
export interface CancelRunsResult {
  /** How many runs this call cancelled. */
  readonly cancelled: number;
  /** Their ids. */
  readonly runIds: readonly string[];
  /** The batch was full: matching runs may remain, so call again. */
  readonly more: boolean;
}

/**
 * Cancels started runs of a concrete flow, at most `batchSize` per call, in one set-based
 * statement, each as {@linkcode cancelRun} cancels one. Repeat while `more` is true to cancel them
 * all; each call is its own short transaction unless `sql` is one.
 *
 * @param sql The database client, or a transaction.
 * @param flowSlug The concrete flow whose runs to cancel.
 * @param options The reason and which runs.
 * @returns The runs cancelled and whether more may match.
 * @throws {RangeError} When `batchSize` is not a whole number from 1 to 10,000.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { cancelRuns } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * let result;
 * do {
 *   result = await cancelRuns(sql, "orders_v1", { reason: "superseded by v2" });
 * } while (result.more);
 * ```
 */
export async function cancelRuns(
  sql: Queryable,
  flowSlug: string,
  options: CancelRunsOptions = {},
): Promise<CancelRunsResult> {
  const batchSize = options.batchSize ?? 500;
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) {
    throw new RangeError(
      `Cannot cancel runs of flow ${JSON.stringify(flowSlug)}: batchSize must be a whole number ` +
        `from 1 to 10000, got ${String(batchSize)}`,
    );
  }
  const row = await cancelRunsRow(sql, {
    flowSlug,
    reason: options.reason ?? null,
    startedVia: options.startedVia ?? null,
    startedBefore: options.startedBefore ?? null,
    batchSize,
  });
  return { cancelled: row.cancelled, runIds: row.run_ids, more: row.more };
}
