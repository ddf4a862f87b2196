/**
 * Reports task outcomes to the database.
 *
 * Successes are coalesced: a result is queued, and one flush sends everything queued through one
 * `sluice.complete_tasks` call. The flush starts on a microtask, so results settling in the same
 * turn of the event loop (a batch of synchronous handlers) share it, without the millisecond a
 * timer costs an idle worker. One flush is in flight at a time; results finishing meanwhile wait
 * for the next, so batches grow with the load. Failures go through `sluice.fail_task`, one call
 * each, from the same pump.
 *
 * Every report carries its attempt's fencing token (attempt and worker id). The database applies
 * it only while that attempt is the task's live one and answers `stale` otherwise, changing
 * nothing: the task was taken over (stalled recovery requeued it, another worker may run it now).
 * A stale report is logged as a warning. By then its handler has returned, or its signal was
 * aborted (a timeout or shutdown is what let the report go out before the handler returned), so
 * there is nothing left to abort.
 *
 * Transient database errors are retried with backoff until they succeed or the worker gives up at
 * shutdown: an outcome the worker computed stays in memory until the database has it. When
 * `complete_tasks` rejects a batch with a SQL error, the batch is retried one result at a time
 * and a result the database refuses (e.g. a map source that is not an array) fails its attempt
 * through `fail_task` with the database's message.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { MAX_TASK_ERROR_LENGTH } from "./_errors.ts";
import { describeError, truncate } from "./describe_error.ts";
import {
  type AttemptToken,
  type CompletedRun,
  completeTasks,
  type FailOutcome,
  failTask,
  type TaskResult,
} from "../db/worker_queries.ts";
import { errorCode } from "../db/transient_error.ts";
import { backoffDelay, type OutageTracker, retryTransient, sleep } from "./_retry.ts";
import type { Logger } from "./logger.ts";

/** Largest number of results sent in one `complete_tasks` call. */
const MAX_BATCH = 500;

/**
 * How often one batch is sent again after a cancel request ended its statement; a batch that
 * someone keeps cancelling is handled as refused after that.
 */
const MAX_CANCELLED_REPORTS = 5;

/**
 * Whether `error` is a statement ended by a cancel request (`pg_cancel_backend`, the driver's
 * cancel), not by `statement_timeout`, which shares the SQLSTATE 57014 and would only time out
 * again.
 */
function isCancelRequest(error: unknown): boolean {
  return errorCode(error) === "57014" && error instanceof Error &&
    error.message.includes("user request");
}

/** A failed attempt waiting to be reported. */
export interface PendingFailure extends AttemptToken {
  readonly error: string;
  readonly retryDelaySeconds: number | null;
}

/** Queues outcomes and reports them, batching successes. */
export class ResultReporter {
  #sql: Sql;
  #logger: Logger;
  #outage: OutageTracker;
  #completions: TaskResult[] = [];
  #failures: PendingFailure[] = [];
  #pumping = false;
  #scheduled = false;
  #idleWaiters: (() => void)[] = [];
  #giveUp = new AbortController();
  #onProgress: () => void;
  #onRunsCompleted: (runs: readonly CompletedRun[]) => void;

  /**
   * @param onProgress Called whenever outcomes left the queue or were reported (the poll loop
   * limits reading by what waits).
   * @param onRunsCompleted Called with the runs a reported batch completed (the run metric).
   */
  constructor(
    sql: Sql,
    logger: Logger,
    outage: OutageTracker,
    onProgress: () => void,
    onRunsCompleted: (runs: readonly CompletedRun[]) => void,
  ) {
    this.#sql = sql;
    this.#logger = logger;
    this.#outage = outage;
    this.#onProgress = onProgress;
    this.#onRunsCompleted = onRunsCompleted;
  }

  /**
   * Outcomes queued behind the report in flight. The poll loop limits reading by these, not by
   * everything unreported: the results being reported leave their slots to the next batch, so the
   * next claim overlaps with the report instead of waiting for it.
   */
  get waiting(): number {
    return this.#completions.length + this.#failures.length;
  }

  /** Queues a success. */
  complete(result: TaskResult): void {
    this.#completions.push(result);
    this.#schedule();
  }

  /** Queues a failed attempt. */
  fail(failure: PendingFailure): void {
    this.#failures.push(failure);
    this.#schedule();
  }

  /** Resolves when nothing is queued or in flight. */
  idle(): Promise<void> {
    if (!this.#pumping && !this.#scheduled && this.#isEmpty()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Stops retrying: calls that fail transiently from now on are dropped (logged), so that a
   * shutdown during an outage ends. Returns how many outcomes were still unreported.
   */
  giveUp(): number {
    const unreported = this.#completions.length + this.#failures.length;
    this.#giveUp.abort();
    return unreported;
  }

  #isEmpty(): boolean {
    return this.#completions.length === 0 && this.#failures.length === 0;
  }

  #schedule(): void {
    if (this.#pumping || this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      while (!this.#isEmpty()) {
        if (this.#completions.length > 0) {
          const batch = this.#completions.splice(0, MAX_BATCH);
          this.#onProgress();
          await this.#reportCompletions(batch);
          this.#onProgress();
        }
        const failures = this.#failures.splice(0);
        if (failures.length > 0) this.#onProgress();
        for (const failure of failures) {
          await this.#reportFailure(failure);
          this.#onProgress();
        }
      }
    } catch (error) {
      // Unreachable by design (every report handles its own errors); logged so that a bug does
      // not pass silently.
      this.#logger.error("result reporter failed", { error: describeError(error) });
    } finally {
      this.#pumping = false;
      this.#onProgress();
      if (!this.#isEmpty()) {
        this.#schedule();
      } else {
        for (const resolve of this.#idleWaiters.splice(0)) resolve();
      }
    }
  }

  async #reportCompletions(batch: TaskResult[], cancels = 0): Promise<void> {
    let stale: readonly Omit<AttemptToken, "workerId">[];
    let runsCompleted: readonly CompletedRun[];
    try {
      ({ stale, runsCompleted } = await retryTransient(() => completeTasks(this.#sql, batch), {
        operation: "complete_tasks",
        outage: this.#outage,
        signal: this.#giveUp.signal,
      }));
    } catch (error) {
      if (this.#giveUp.signal.aborted) {
        this.#dropped(batch.length, error);
        return;
      }
      if (isCancelRequest(error) && cancels < MAX_CANCELLED_REPORTS) {
        // Not the database refusing the results: a cancel request ended the statement (one meant
        // for another statement of the connection, e.g. a long poll at shutdown), which rolled
        // back and applied nothing. Failing the attempts would lose finished results.
        this.#logger.warn("complete_tasks was cancelled: reporting the results again", {
          results: batch.length,
          error: describeError(error),
        });
        await sleep(backoffDelay(cancels + 1), this.#giveUp.signal);
        await this.#reportCompletions(batch, cancels + 1);
        return;
      }
      if (batch.length === 1) {
        await this.#refused(batch[0], error);
        return;
      }
      this.#logger.warn("complete_tasks rejected a batch: reporting its results one by one", {
        results: batch.length,
        error: describeError(error),
      });
      for (const result of batch) await this.#reportCompletions([result]);
      return;
    }
    if (this.#logger.enabled("debug")) {
      for (const result of batch) {
        this.#logger.debug("task completed", {
          run_id: result.runId,
          step_slug: result.stepSlug,
          task_index: result.taskIndex,
          attempt: result.attempt,
        });
      }
    }
    for (const result of stale) this.#stale("complete_tasks", result);
    if (runsCompleted.length > 0) this.#onRunsCompleted(runsCompleted);
  }

  /** The database answered `stale`: the attempt is no longer the task's live one. */
  #stale(operation: string, token: Omit<AttemptToken, "workerId">): void {
    this.#logger.warn("stale report ignored: the attempt is no longer live", {
      operation,
      run_id: token.runId,
      step_slug: token.stepSlug,
      task_index: token.taskIndex,
      attempt: token.attempt,
    });
  }

  /** The database refused one result: its attempt fails with the database's message. */
  async #refused(result: TaskResult, error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    this.#logger.warn("the database refused a task result: failing the attempt", {
      run_id: result.runId,
      step_slug: result.stepSlug,
      task_index: result.taskIndex,
      error: describeError(error),
    });
    await this.#reportFailure({
      runId: result.runId,
      stepSlug: result.stepSlug,
      taskIndex: result.taskIndex,
      attempt: result.attempt,
      workerId: result.workerId,
      error: truncate(`Cannot complete task: ${message}`, MAX_TASK_ERROR_LENGTH),
      retryDelaySeconds: null,
    });
  }

  async #reportFailure(failure: PendingFailure): Promise<void> {
    try {
      const outcome: FailOutcome = await retryTransient(() => failTask(this.#sql, failure), {
        operation: "fail_task",
        outage: this.#outage,
        signal: this.#giveUp.signal,
      });
      if (outcome === "stale") {
        this.#stale("fail_task", failure);
        return;
      }
      this.#logger.debug("task failure reported", {
        run_id: failure.runId,
        step_slug: failure.stepSlug,
        task_index: failure.taskIndex,
        attempt: failure.attempt,
        outcome,
      });
    } catch (error) {
      if (this.#giveUp.signal.aborted) {
        this.#dropped(1, error);
        return;
      }
      this.#logger.error("cannot report a task failure", {
        run_id: failure.runId,
        step_slug: failure.stepSlug,
        task_index: failure.taskIndex,
        error: describeError(error),
      });
    }
  }

  #dropped(count: number, error: unknown): void {
    this.#logger.error(
      "results not reported before the worker stopped; stalled-task recovery will retry their tasks",
      { results: count, error: describeError(error) },
    );
  }
}
