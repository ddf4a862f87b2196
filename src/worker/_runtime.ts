/**
 * A running worker: owns the poll loop, the heartbeat, the result reporter and the LISTEN
 * connection, and runs the shutdown sequence — stop polling, let in-flight tasks finish (aborting
 * them after the grace period when one applies), flush their results, mark the worker stopped,
 * close what the worker opened.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import type { StepDefinition, StepHandler } from "../dsl/step_definition.ts";
import { describeError } from "./describe_error.ts";
import { Heartbeat, type SweepDuty } from "./_heartbeat.ts";
import { PollLoop, type PollLoopEnd } from "./_poll_loop.ts";
import { stopWorker, type SupportedRoute } from "../db/worker_queries.ts";
import type { QueueListener } from "./_queue_listener.ts";
import { ResultReporter } from "./_result_reporter.ts";
import { WorkerTelemetry } from "./_telemetry.ts";
import { RunningAttempts } from "./_running_attempts.ts";
import { OutageTracker, retryTransient } from "./_retry.ts";
import { shutdownReason } from "./_task_executor.ts";
import type { Logger } from "./logger.ts";
import type { WorkerStatus } from "./worker_options.ts";

/** Everything a runtime needs, resolved from the worker options. */
export interface RuntimeSettings {
  readonly workerId: string;
  readonly functionName: string;
  readonly queue: string;
  readonly supported: readonly SupportedRoute[];
  readonly handlers: ReadonlyMap<string, StepHandler>;
  /** The flow's wait steps by the one step each depends on. */
  readonly waits: ReadonlyMap<string, readonly StepDefinition[]>;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly maxConcurrent: number;
  readonly batchSize: number;
  readonly visibilityTimeout: number;
  readonly pollIntervalMs: number;
  readonly maxPollSeconds: number;
  readonly heartbeatIntervalMs: number;
  readonly stalledCheckIntervalMs: number;
  readonly shutdownGraceMs: number;
  readonly maxOutputBytes: number;
  /** Close `sql` at the end (the worker opened it). */
  readonly ownsPool: boolean;
  /** The sweep duty shared by the workers of one process (a co-hosting function). */
  readonly sweeps?: SweepDuty;
}

/** Longest time spent flushing results and marking the worker stopped at shutdown. */
const MIN_FLUSH_TIMEOUT_MS = 5000;

type ShutdownReason = "requested" | "deprecated" | "fenced" | "fatal";

/** One running worker. */
export class WorkerRuntime {
  #sql: Sql;
  #logger: Logger;
  #listener: QueueListener | null;
  #settings: RuntimeSettings;
  #outage: OutageTracker;
  #reporter: ResultReporter;
  #loop: PollLoop;
  #heartbeat: Heartbeat;
  #pollStop = new AbortController();
  #taskAbort = new AbortController();
  #abortTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the abort timer fires (`Date.now()` based), and the grace it was set from. */
  #abortAt = Number.POSITIVE_INFINITY;
  #graceMs: number | null = null;
  /** No task is in flight any more: nothing left to abort. */
  #drained = false;
  #status: WorkerStatus = "running";
  #loopEnded: Promise<PollLoopEnd> | null = null;
  #shutdown: Promise<void> | null = null;
  #resolveDone!: () => void;
  #resolvePollingStopped!: () => void;
  /** Resolves once the poll loop has ended, with `status` already `fatal` if that ended it. */
  readonly pollingStopped: Promise<void>;
  /** Resolves once the worker has stopped and released everything. */
  readonly done: Promise<void>;

  constructor(sql: Sql, logger: Logger, listener: QueueListener | null, settings: RuntimeSettings) {
    this.#sql = sql;
    this.#logger = logger;
    this.#listener = listener;
    this.#settings = settings;
    this.#outage = new OutageTracker(logger);
    const running = new RunningAttempts();
    const telemetry = new WorkerTelemetry(settings.queue);
    this.#reporter = new ResultReporter(
      sql,
      logger,
      this.#outage,
      () => this.#loop.capacityChanged(),
      (runs) => telemetry.runsCompleted(runs),
    );
    this.#loop = new PollLoop(sql, logger, this.#outage, this.#reporter, telemetry, {
      queue: settings.queue,
      workerId: settings.workerId,
      supported: settings.supported,
      handlers: settings.handlers,
      waits: settings.waits,
      maxConcurrent: settings.maxConcurrent,
      batchSize: settings.batchSize,
      visibilityTimeout: settings.visibilityTimeout,
      pollIntervalMs: settings.pollIntervalMs,
      maxPollSeconds: settings.maxPollSeconds,
      listener,
    }, {
      sql,
      env: settings.env,
      shutdownSignal: this.#taskAbort.signal,
      maxOutputBytes: settings.maxOutputBytes,
      running,
    });
    this.#heartbeat = new Heartbeat(sql, logger, this.#outage, {
      workerId: settings.workerId,
      intervalMs: settings.heartbeatIntervalMs,
      stalledCheckIntervalMs: settings.stalledCheckIntervalMs,
      onDeprecated: () => void this.#stop("deprecated"),
      running,
      sweeps: settings.sweeps,
    });
    this.done = new Promise((resolve) => this.#resolveDone = resolve);
    this.pollingStopped = new Promise((resolve) => this.#resolvePollingStopped = resolve);
  }

  /** The worker's status. */
  get status(): WorkerStatus {
    return this.#status;
  }

  /** Starts the heartbeat and the poll loop. */
  start(): void {
    this.#heartbeat.start();
    const loopEnded = this.#loop.run(this.#pollStop.signal).catch((error): PollLoopEnd => {
      this.#logger.error("poll loop failed", { error: describeError(error) });
      return { kind: "stopped" };
    });
    this.#loopEnded = loopEnded;
    loopEnded.then((end) => {
      if (end.kind === "fatal") this.#fatal(end);
      else if (end.kind === "queue_gone") this.#queueGone(end.error);
      else if (end.kind === "fenced") this.#fenced(end.flowSlug);
      else void this.#stop("requested");
      this.#resolvePollingStopped();
    });
  }

  /**
   * Stops gracefully: in-flight tasks get `graceMs` (default `shutdownGraceMs`) to finish, then
   * their signals abort and their attempts fail. Resolves when the worker has stopped.
   *
   * Rejects with a `RangeError`, changing nothing, when `graceMs` is not a finite number >= 0.
   */
  stop(graceMs: number = this.#settings.shutdownGraceMs): Promise<void> {
    if (typeof graceMs !== "number" || !Number.isFinite(graceMs) || graceMs < 0) {
      return Promise.reject(
        new RangeError(
          `Cannot stop worker ${this.#settings.workerId}: graceMs must be a finite number >= 0, ` +
            `got ${String(graceMs)}`,
        ),
      );
    }
    this.#abortTasksAfter(graceMs);
    return this.#stop("requested");
  }

  #fatal(end: Extract<PollLoopEnd, { kind: "fatal" }>): void {
    this.#status = "fatal";
    const { claim } = end;
    const offending = claim.fatal.map((entry) => `${entry.messageId} (${entry.class})`).join(", ");
    this.#logger.fatal(
      `unsupported work on queue "${this.#settings.queue}": message ${offending}; ` +
        `worker ${this.#settings.workerId} stops, nothing of the batch was claimed, and restarts ` +
        `of worker function "${this.#settings.functionName}" are paused until an operator ` +
        `clears them (sluice.clear_restart_pause)`,
      {
        message_ids: claim.messageIds,
        fatal: claim.fatal.map((entry) => ({ message_id: entry.messageId, class: entry.class })),
      },
    );
    void this.#stop("fatal");
  }

  #queueGone(error: unknown): void {
    this.#status = "fatal";
    this.#logger.fatal(
      `Cannot serve queue "${this.#settings.queue}": it no longer exists (the flow was deleted, ` +
        `e.g. flows reset --force); worker ${this.#settings.workerId} stops`,
      { error: describeError(error) },
    );
    void this.#stop("fatal");
  }

  /**
   * Not `fatal`: the work is not unsupported, the worker is outdated, so no restart pause applies
   * and a supervisor may start a worker again (on the new definition).
   */
  #fenced(flowSlug: string): void {
    this.#logger.error(
      `Cannot serve flow ${JSON.stringify(flowSlug)}: it was recompiled after worker ` +
        `${this.#settings.workerId} registered (a development recompile replaced its definition); ` +
        `its claims and reports are refused and it stops. Start a worker on the new definition; ` +
        `restarts of worker function "${this.#settings.functionName}" are not paused`,
      { flow_slug: flowSlug },
    );
    void this.#stop("fenced");
  }

  /** Aborts the in-flight tasks after `graceMs`, unless an earlier abort is already due. */
  #abortTasksAfter(graceMs: number): void {
    const abortAt = Date.now() + graceMs;
    if (abortAt >= this.#abortAt || this.#taskAbort.signal.aborted || this.#drained) return;
    clearTimeout(this.#abortTimer);
    this.#abortAt = abortAt;
    this.#graceMs = graceMs;
    this.#abortTimer = setTimeout(() => {
      const running = this.#loop.inFlight;
      if (running > 0) {
        this.#logger.warn("shutdown grace expired: aborting in-flight tasks", {
          tasks: running,
          shutdown_grace_ms: graceMs,
        });
      }
      this.#taskAbort.abort(shutdownReason(graceMs));
    }, graceMs);
  }

  #stop(reason: ShutdownReason): Promise<void> {
    this.#shutdown ??= this.#runShutdown(reason).catch((error) => {
      this.#logger.error("shutdown failed", { error: describeError(error) });
    }).finally(() => this.#resolveDone());
    return this.done;
  }

  async #runShutdown(reason: ShutdownReason): Promise<void> {
    if (this.#status === "running") this.#status = "stopping";
    this.#logger.info("worker stopping", { reason, in_flight: this.#loop.inFlight });
    this.#pollStop.abort();
    await this.#loopEnded;

    // Every execution settles by its timeout at the latest, or at once when aborted.
    await this.#loop.drained(null);
    this.#drained = true;
    clearTimeout(this.#abortTimer);

    const flushTimeout = Math.max(
      MIN_FLUSH_TIMEOUT_MS,
      this.#graceMs ?? this.#settings.shutdownGraceMs,
    );
    const giveUp = setTimeout(() => {
      const unreported = this.#reporter.giveUp();
      if (unreported > 0) {
        this.#logger.warn("results still unreported at shutdown: giving up after one more try", {
          results: unreported,
        });
      }
    }, flushTimeout);
    await this.#reporter.idle();
    clearTimeout(giveUp);

    await this.#heartbeat.stop();
    await this.#listener?.close();
    const stopTimeout = new AbortController();
    const stopTimer = setTimeout(() => stopTimeout.abort(), MIN_FLUSH_TIMEOUT_MS);
    try {
      await retryTransient(() => stopWorker(this.#sql, this.#settings.workerId), {
        operation: "stop_worker",
        outage: this.#outage,
        signal: stopTimeout.signal,
      });
    } catch (error) {
      this.#logger.error("cannot mark the worker stopped", { error: describeError(error) });
    } finally {
      clearTimeout(stopTimer);
    }
    if (this.#settings.ownsPool) await this.#sql.end({ timeout: 5 }).catch(() => {});
    if (this.#status !== "fatal") this.#status = "stopped";
    this.#logger.info("worker stopped", { reason });
  }
}
