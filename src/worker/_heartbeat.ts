/**
 * The worker's heartbeat: every interval it refreshes the worker row, learning whether the worker
 * was deprecated and which of its running attempts are no longer live (their run was cancelled,
 * or the task was requeued or retried): it aborts those handlers' signals. At most once per
 * stalled-check interval it also runs stalled-task recovery. A failed call is logged (transient
 * ones once per outage) and simply tried again next time. Each beat also fires due schedule ticks
 * (docs/schedules.md), releases due waits (docs/waits.md) and starts the runs of debounced starts
 * whose window closed (docs/flow_control.md).
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { isTransientDatabaseError } from "../db/transient_error.ts";
import { describeError } from "./describe_error.ts";
import {
  heartbeatWorker,
  releaseDueWaits,
  releaseHeldTasks,
  requeueStalledTasks,
  startDueDebounced,
} from "../db/worker_queries.ts";
import { sweepSchedules } from "../db/schedule_queries.ts";
import { nextDueOrProblem } from "../dsl/next_due.ts";
import { type OutageTracker, sleep } from "./_retry.ts";
import type { RunningAttempts } from "./_running_attempts.ts";
import type { Logger } from "./logger.ts";

/** Due waits one `release_due_waits` call releases (its runs are locked together). */
const WAIT_RELEASE_BATCH = 100;

/** Due debounced starts one `start_due_debounced` call starts. */
const DEBOUNCE_START_BATCH = 100;

/** Settings of a {@linkcode Heartbeat}. */
/**
 * Which worker of a process runs the sweeps that are the database's, not any one worker's: due
 * schedule ticks, due waits, stalled tasks. The workers of a co-hosting function share one, so the
 * process sweeps once per beat instead of once per worker; the earliest worker still beating
 * holds the duty, and it passes on when that one stops.
 */
export class SweepDuty {
  #holders: string[] = [];

  /** A worker's heartbeat starts. */
  join(workerId: string): void {
    this.#holders.push(workerId);
  }

  /** A worker's heartbeat stops. */
  leave(workerId: string): void {
    this.#holders = this.#holders.filter((id) => id !== workerId);
  }

  /** Whether `workerId` sweeps now. */
  holds(workerId: string): boolean {
    return this.#holders[0] === workerId;
  }
}

export interface HeartbeatSettings {
  readonly workerId: string;
  readonly intervalMs: number;
  readonly stalledCheckIntervalMs: number;
  /** Called once, when the database says the worker is deprecated. */
  readonly onDeprecated: () => void;
  /** The attempts the worker's handlers are running: sent with each beat. */
  readonly running: RunningAttempts;
  /** Shared with the other workers of the process; a worker alone sweeps on every beat. */
  readonly sweeps?: SweepDuty;
}

/** Runs the heartbeat loop until stopped. */
export class Heartbeat {
  #sql: Sql;
  #logger: Logger;
  #outage: OutageTracker;
  #settings: HeartbeatSettings;
  #stop = new AbortController();
  #loop: Promise<void> | null = null;
  #lastStalledCheck = Number.NEGATIVE_INFINITY;
  #deprecated = false;

  constructor(sql: Sql, logger: Logger, outage: OutageTracker, settings: HeartbeatSettings) {
    this.#sql = sql;
    this.#logger = logger;
    this.#outage = outage;
    this.#settings = settings;
  }

  /** Starts the loop; the first beat comes after one interval. */
  start(): void {
    if (this.#loop !== null) return;
    this.#settings.sweeps?.join(this.#settings.workerId);
    this.#loop = this.#run();
  }

  /** Stops the loop and waits for a beat in progress. */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    this.#settings.sweeps?.leave(this.#settings.workerId);
  }

  #sweeps(): boolean {
    return this.#settings.sweeps?.holds(this.#settings.workerId) ?? true;
  }

  async #run(): Promise<void> {
    const signal = this.#stop.signal;
    while (!signal.aborted) {
      await sleep(this.#settings.intervalMs, signal);
      if (signal.aborted) break;
      await this.#beat();
      if (signal.aborted) break;
      if (!this.#sweeps()) continue;
      await this.#fireSchedules();
      if (signal.aborted) break;
      await this.#releaseWaits();
      if (signal.aborted) break;
      await this.#startDebounced();
      if (signal.aborted) break;
      if (Date.now() - this.#lastStalledCheck >= this.#settings.stalledCheckIntervalMs) {
        this.#lastStalledCheck = Date.now();
        await this.#requeueStalled();
        if (signal.aborted) break;
        await this.#releaseHeld();
      }
    }
  }

  async #beat(): Promise<void> {
    try {
      const { running } = this.#settings;
      const { deprecated, aborted } = await heartbeatWorker(
        this.#sql,
        this.#settings.workerId,
        running.list(),
      );
      this.#outage.answered();
      for (const attempt of aborted) {
        this.#logger.info("aborting a handler: its attempt is no longer live", {
          run_id: attempt.runId,
          step_slug: attempt.stepSlug,
          task_index: attempt.taskIndex,
          attempt: attempt.attempt,
          run_status: attempt.runStatus,
          task_status: attempt.taskStatus,
        });
      }
      running.abort(aborted);
      if (deprecated && !this.#deprecated) {
        this.#deprecated = true;
        this.#logger.info("worker deprecated: draining and stopping");
        this.#settings.onDeprecated();
      }
    } catch (error) {
      this.#failed("heartbeat_worker", error);
    }
  }

  async #requeueStalled(): Promise<void> {
    try {
      const handled = await requeueStalledTasks(this.#sql);
      this.#outage.answered();
      if (handled > 0) this.#logger.info("stalled tasks recovered", { tasks: handled });
    } catch (error) {
      this.#failed("requeue_stalled_tasks", error);
    }
  }

  // With the stalled check: a safety net, since the commit that frees a slot releases its key's
  // held tasks itself (docs/flow_control.md#concurrency-limits). With none held it is one indexed
  // lookup.
  async #releaseHeld(): Promise<void> {
    try {
      const sent = await releaseHeldTasks(this.#sql);
      this.#outage.answered();
      if (sent > 0) this.#logger.info("held tasks released", { tasks: sent });
    } catch (error) {
      this.#failed("release_held_tasks", error);
    }
  }

  // Every beat, not every stalled check: the beat interval (5 s by default) bounds how late a tick
  // fires while any worker runs. With nothing due it is one indexed lookup.
  async #fireSchedules(): Promise<void> {
    try {
      const { fired, paused } = await sweepSchedules(
        this.#sql,
        undefined,
        (row) => nextDueOrProblem(row.cron, row.timezone, row.advanced_from),
      );
      this.#outage.answered();
      if (fired > 0) this.#logger.info("schedule ticks fired", { ticks: fired });
      for (const schedule of paused) {
        this.#logger.error("schedule paused: its next due time cannot be computed", {
          schedule: schedule.schedule_name,
          error: schedule.last_error,
        });
      }
    } catch (error) {
      this.#failed("fire_due_schedules", error);
    }
  }

  // Every beat, like schedules: the beat interval bounds how late a due sleep or timeout is
  // released while any worker runs. With nothing due it is one indexed lookup. A full batch may
  // leave more due (a burst of sleeps due at one instant): the beat keeps sweeping, one short
  // transaction per batch, for at most half an interval, so a burst drains in one beat instead of
  // one batch per beat.
  async #releaseWaits(): Promise<void> {
    const until = performance.now() + this.#settings.intervalMs / 2;
    let total = 0;
    try {
      for (;;) {
        const released = await releaseDueWaits(this.#sql, WAIT_RELEASE_BATCH);
        this.#outage.answered();
        total += released;
        if (released < WAIT_RELEASE_BATCH || performance.now() >= until) break;
      }
    } catch (error) {
      this.#failed("release_due_waits", error);
    }
    if (total > 0) this.#logger.info("due waits released", { waits: total });
  }

  // Every beat, like waits: the beat interval bounds how late a debounced run starts after its
  // window closed. With nothing due it is one indexed lookup; a full batch sweeps again, for at
  // most half an interval.
  async #startDebounced(): Promise<void> {
    const until = performance.now() + this.#settings.intervalMs / 2;
    let total = 0;
    try {
      for (;;) {
        const started = await startDueDebounced(this.#sql, DEBOUNCE_START_BATCH);
        this.#outage.answered();
        total += started;
        if (started < DEBOUNCE_START_BATCH || performance.now() >= until) break;
      }
    } catch (error) {
      this.#failed("start_due_debounced", error);
    }
    if (total > 0) this.#logger.info("debounced runs started", { runs: total });
  }

  #failed(operation: string, error: unknown): void {
    if (isTransientDatabaseError(error)) {
      this.#outage.failed(operation, error);
    } else {
      this.#outage.answered();
      this.#logger.error(`${operation} failed`, { error: describeError(error) });
    }
  }
}
