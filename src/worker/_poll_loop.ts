/**
 * The poll loop: keeps up to `maxConcurrent` tasks in flight, reading only as many messages as
 * there are free slots, claiming them through `sluice.start_tasks`, and starting each claimed task
 * at once. There is no per-batch barrier: every task finishes on its own and frees its slot, and
 * the loop reads again as soon as a slot is free, so one slow task never holds up the others.
 *
 * When a read finds nothing the loop waits for a NOTIFY about its queue, or for the LISTEN
 * session's look at the queues every poll interval (without that, the poll interval, whichever
 * comes first); without LISTEN the read itself long-polls (`pgmq.read_with_poll`).
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import type { StepDefinition, StepHandler } from "../dsl/step_definition.ts";
import { describeError } from "./describe_error.ts";
import type { QueueListener } from "./_queue_listener.ts";
import {
  type ClaimedTask,
  type ClaimResult,
  readAndClaim,
  type ReadMode,
  type SupportedRoute,
} from "../db/worker_queries.ts";
import type { ResultReporter } from "./_result_reporter.ts";
import { backoffDelay, type OutageTracker, retryTransient, sleep } from "./_retry.ts";
import { executeTask, type ExecutionEnvironment } from "./_task_executor.ts";
import type { Logger } from "./logger.ts";
import type { WorkerTelemetry } from "./_telemetry.ts";
import { context } from "../telemetry/otel_api.ts";

/** Settings of a {@linkcode PollLoop}. */
export interface PollLoopSettings {
  readonly queue: string;
  readonly workerId: string;
  readonly supported: readonly SupportedRoute[];
  readonly handlers: ReadonlyMap<string, StepHandler>;
  /** The wait steps of the flow by the one step each depends on (their parameters are computed here). */
  readonly waits: ReadonlyMap<string, readonly StepDefinition[]>;
  readonly maxConcurrent: number;
  readonly batchSize: number;
  readonly visibilityTimeout: number;
  readonly pollIntervalMs: number;
  readonly maxPollSeconds: number;
  /** `null`: no LISTEN connection, the read long-polls. */
  readonly listener: QueueListener | null;
}

/** How the loop ended. */
export type PollLoopEnd =
  | { readonly kind: "stopped" }
  | { readonly kind: "fatal"; readonly claim: ClaimResult }
  | { readonly kind: "queue_gone"; readonly error: unknown }
  | { readonly kind: "fenced"; readonly flowSlug: string };

/** Interval between checks inside `pgmq.read_with_poll` when long-polling. */
const LONG_POLL_INTERVAL_MS = 100;

/** A promise that resolves on the next `fire()`. */
class Pulse {
  #waiters: (() => void)[] = [];

  fire(): void {
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  next(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.#waiters.push(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

/** Reads, claims and dispatches tasks of one queue. */
export class PollLoop {
  #sql: Sql;
  #logger: Logger;
  #outage: OutageTracker;
  #reporter: ResultReporter;
  #settings: PollLoopSettings;
  #execution: ExecutionEnvironment;
  #inFlight = new Set<Promise<void>>();
  #capacity = new Pulse();
  #mode: ReadMode;
  #telemetry: WorkerTelemetry;
  /**
   * Visibility timeout of the next read: `visibilityTimeout` until the first claim, then the
   * claim visibility (timeout + 2 s) of the tasks claimed last. The read and the claim are one
   * statement, so the read's visibility only lasts if the claim keeps it, which it does when it is
   * the claim's own: each message row is then written once per claim instead of twice.
   */
  #readVisibility: number;

  constructor(
    sql: Sql,
    logger: Logger,
    outage: OutageTracker,
    reporter: ResultReporter,
    telemetry: WorkerTelemetry,
    settings: PollLoopSettings,
    execution: ExecutionEnvironment,
  ) {
    this.#sql = sql;
    this.#logger = logger;
    this.#outage = outage;
    this.#reporter = reporter;
    this.#settings = settings;
    this.#execution = execution;
    this.#readVisibility = settings.visibilityTimeout;
    this.#telemetry = telemetry;
    this.#mode = settings.listener === null
      ? {
        kind: "long_poll",
        maxPollSeconds: settings.maxPollSeconds,
        pollIntervalMs: LONG_POLL_INTERVAL_MS,
      }
      : { kind: "read" };
  }

  /** Tasks currently executing. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Wakes the loop when the reporter made progress (what waits to be reported limits reading). */
  capacityChanged(): void {
    this.#capacity.fire();
  }

  /** Runs until `stop` aborts (ends `stopped`) or a claim comes back fatal. */
  async run(stop: AbortSignal): Promise<PollLoopEnd> {
    const { maxConcurrent, batchSize, listener } = this.#settings;
    let errors = 0;
    while (!stop.aborted) {
      while (!stop.aborted && !this.#hasCapacity()) await this.#capacity.next(stop);
      if (stop.aborted) break;

      const quantity = Math.min(batchSize, maxConcurrent - this.#inFlight.size);
      const sequence = listener?.sequence ?? 0;
      let claim: ClaimResult;
      try {
        claim = await retryTransient(
          () =>
            readAndClaim(this.#sql, {
              queue: this.#settings.queue,
              visibilityTimeout: this.#readVisibility,
              quantity,
              workerId: this.#settings.workerId,
              supported: this.#settings.supported,
              mode: this.#mode,
              signal: this.#mode.kind === "long_poll" ? stop : undefined,
            }),
          { operation: "read and claim", outage: this.#outage, signal: stop },
        );
        errors = 0;
      } catch (error) {
        if (stop.aborted) break;
        // The flow was deleted under the worker (flows reset --force): retrying cannot succeed.
        if (isQueueGone(error, this.#settings.queue)) return { kind: "queue_gone", error };
        errors++;
        this.#logger.error("cannot read and claim tasks: retrying", {
          error: describeError(error),
          consecutive_errors: errors,
        });
        await sleep(backoffDelay(errors), stop);
        continue;
      }

      if (claim.outcome === "fatal") return { kind: "fatal", claim };
      if (claim.outcome === "fenced") return { kind: "fenced", flowSlug: claim.flowSlug ?? "" };
      for (const task of claim.tasks) this.#dispatch(task);
      if (claim.tasks.length > 0) {
        this.#readVisibility = Math.max(...claim.tasks.map((task) => task.timeoutSeconds)) + 2;
      }
      if (claim.duplicates.length > 0 || claim.archived.length > 0) {
        this.#logger.debug("messages not claimed", {
          duplicates: claim.duplicates,
          archived: claim.archived,
        });
      }
      // A short read means the queue had no more visible messages when it ran; unless a
      // notification arrived since (the sequence moved), wait for one instead of reading again.
      if (claim.messageIds.length < quantity && listener !== null) {
        // A session that looks at the queues every interval wakes the loop itself when there
        // is something to read: no read of its own on a timer.
        await listener.wait(
          sequence,
          listener.looksPeriodically ? null : this.#settings.pollIntervalMs,
          stop,
        );
      }
    }
    return { kind: "stopped" };
  }

  /**
   * Resolves `true` once no task is in flight, or `false` when `timeoutMs` passes first
   * (`null`: no limit).
   */
  async drained(timeoutMs: number | null): Promise<boolean> {
    const deadline = timeoutMs === null ? Number.POSITIVE_INFINITY : Date.now() + timeoutMs;
    while (this.#inFlight.size > 0) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return false;
      const timeout = new AbortController();
      const timer = Number.isFinite(remaining)
        ? setTimeout(() => timeout.abort(), remaining)
        : undefined;
      await Promise.race([Promise.race(this.#inFlight), this.#capacity.next(timeout.signal)]);
      clearTimeout(timer);
      timeout.abort();
    }
    return true;
  }

  #hasCapacity(): boolean {
    const max = this.#settings.maxConcurrent;
    return this.#inFlight.size < max && this.#reporter.waiting < max;
  }

  #dispatch(task: ClaimedTask): void {
    const handler = this.#settings.handlers.get(task.stepSlug);
    const started = Date.now();
    const fields = {
      run_id: task.runId,
      step_slug: task.stepSlug,
      task_index: task.taskIndex,
      attempt: task.attempt,
    };
    this.#logger.debug("task started", { ...fields, message_id: task.messageId });
    const running = (async () => {
      if (handler === undefined) {
        // start_tasks only hands out supported routes, and those come from the flow's steps.
        throw new Error(`no handler for step "${task.stepSlug}"`);
      }
      const attempt = this.#telemetry.start(task);
      // The handler runs with the attempt's span active: its own spans (fetch, database calls)
      // nest under it.
      const outcome = await context.with(
        attempt.context,
        () => executeTask(task, handler, this.#execution, this.#settings.waits.get(task.stepSlug)),
      );
      this.#telemetry.end(attempt, task, outcome);
      const duration = Date.now() - started;
      if (outcome.kind === "completed") {
        this.#logger.debug("task succeeded", { ...fields, duration_ms: duration });
        this.#reporter.complete({
          runId: task.runId,
          stepSlug: task.stepSlug,
          taskIndex: task.taskIndex,
          attempt: task.attempt,
          workerId: task.workerId,
          outputJson: outcome.outputJson,
          waits: outcome.waits,
        });
      } else {
        const log = outcome.reason === "timeout" || outcome.reason === "shutdown"
          ? this.#logger.warn
          : this.#logger.info;
        log.call(this.#logger, "task attempt failed", {
          ...fields,
          duration_ms: duration,
          reason: outcome.reason,
          retry_delay_seconds: outcome.retryDelaySeconds,
          error: outcome.error.split("\n", 1)[0].slice(0, 300),
        });
        this.#reporter.fail({
          runId: task.runId,
          stepSlug: task.stepSlug,
          taskIndex: task.taskIndex,
          attempt: task.attempt,
          workerId: task.workerId,
          error: outcome.error,
          retryDelaySeconds: outcome.retryDelaySeconds,
        });
      }
    })().catch((error) => {
      this.#logger.error("task dispatch failed", { ...fields, error: describeError(error) });
    }).finally(() => {
      this.#inFlight.delete(running);
      this.#capacity.fire();
    });
    this.#inFlight.add(running);
  }
}

/** Whether `error` says the queue's PGMQ table no longer exists (`42P01` on `pgmq.q_<queue>`). */
function isQueueGone(error: unknown, queue: string): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown };
  return code === "42P01" && typeof message === "string" &&
    message.includes(`pgmq.q_${queue.toLowerCase()}`);
}
