/**
 * The worker function host, one per isolate: the lifecycle state machine (idle, starting,
 * running, draining, stopped; paused, disabled, failed). It starts at most one worker at a time
 * after consulting the function's row, keeps the isolate alive for it through
 * `EdgeRuntime.waitUntil`, and runs the end of the isolate: stop polling, respawn (`_respawn.ts`)
 * while in-flight tasks drain by a deadline. Configuration is resolved by `_host_config.ts`,
 * requests are answered by `_http.ts`.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { connect } from "../db/connect.ts";
import { boundDriverBackoff } from "../db/driver/reconnect.ts";
import { readFunctionState } from "../db/edge_queries.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { describeError } from "../worker/describe_error.ts";
import { Logger } from "../worker/logger.ts";
import type { WorkerHandle } from "../worker/worker_options.ts";
import { launchWorkerGroup } from "../worker/start_worker.ts";
import { BearerAuth } from "./bearer_auth.ts";
import {
  type HostConfig,
  type HostedWorker,
  noConnectionMessage,
  noSecretMessage,
  resolveHostConfig,
} from "./_host_config.ts";
import { answerRequest } from "./_http.ts";
import { claimAndRequestSuccessor } from "./_respawn.ts";
import type {
  WorkerFunctionHandler,
  WorkerFunctionOptions,
  WorkerFunctionState,
  WorkerFunctionStatus,
} from "./edge_options.ts";

/** Why an isolate ends. */
type EndReason = "beforeunload" | "wall_clock_budget" | "requested" | "closed";

/**
 * The workers of one start, handled as one: a plain or step function has one, a co-hosting
 * function one per hosted step. They start together and stop together. One that stops by itself
 * because its flow version was deprecated by a rollout, or recompiled under it (fenced), leaves
 * the others running: that is about its flow only. One that ends `fatal` (unsupported work, or
 * its queue gone) stops the others too: the restart pause that unsupported work sets is the
 * function's, so no isolate would start the neighbours again, and a deployment that is wrong for
 * one step is not trusted with the others' work; they drain their in-flight tasks within their
 * grace period and report every result.
 */
class Workers {
  constructor(readonly all: readonly WorkerHandle[], logger: Logger) {
    if (all.length === 1) return;
    for (const worker of all) {
      void worker.pollingStopped.then(() => {
        if (worker.status !== "fatal") return;
        const others = all.filter((other) => other !== worker && other.status === "running");
        if (others.length === 0) return;
        logger.warn(
          "a co-hosted worker stopped fatal: stopping the function's other workers",
          {
            worker_id: worker.workerId,
            step_slug: worker.stepSlug,
            stopping_worker_ids: others.map((other) => other.workerId),
          },
        );
        for (const other of others) void other.stop();
      });
    }
  }

  get first(): WorkerHandle {
    return this.all[0];
  }

  /** Any worker met unsupported work: the function is paused. */
  get fatal(): boolean {
    return this.all.some((worker) => worker.status === "fatal");
  }

  get running(): boolean {
    return this.all.some((worker) => worker.status === "running");
  }

  get done(): Promise<unknown> {
    return Promise.all(this.all.map((worker) => worker.done));
  }

  get pollingStopped(): Promise<unknown> {
    return Promise.all(this.all.map((worker) => worker.pollingStopped));
  }

  get ids(): string[] {
    return this.all.map((worker) => worker.workerId);
  }

  stop(graceMs?: number): Promise<unknown> {
    return Promise.all(
      this.all.map((worker) => worker.stop(graceMs === undefined ? undefined : { graceMs })),
    );
  }
}

/** What starting the workers came to. */
interface Launch {
  readonly worker: Workers | null;
  readonly status: WorkerFunctionStatus;
}

/** The implementation behind `createWorkerHandler()` and `serveWorkers()`. */
export class WorkerFunctionHost implements WorkerFunctionHandler {
  readonly functionName: string;
  readonly isolateId: string = crypto.randomUUID();
  readonly onEdge: boolean;

  #config: HostConfig;
  #logger: Logger;
  #auth: BearerAuth | null;
  #sql: Sql | null;
  #createdAt = performance.now();

  /** The current workers, from their start until they have stopped. */
  #worker: Workers | null = null;
  /** The start in progress: resolves with the workers, or `null` when none started. */
  #starting: Promise<Workers | null> | null = null;
  /** The life of the latest worker (start, run, stop); what `waitUntil` holds. */
  #life: Promise<void> = Promise.resolve();
  /** `last_invoked_at` as read before the current worker started: the respawn's expected value. */
  #seenInvokedAt: string | null = null;
  /** What became of the last start or worker, reported while idle. */
  #lastOutcome: WorkerFunctionStatus | null = null;
  #budgetTimer: number | undefined;
  #ending: EndReason | null = null;
  #ended: Promise<void> | null = null;
  #endComplete = false;

  constructor(flow: DeployableFlow, options: WorkerFunctionOptions);
  constructor(config: HostConfig);
  constructor(flowOrConfig: DeployableFlow | HostConfig, options?: WorkerFunctionOptions) {
    const config = options === undefined
      ? flowOrConfig as HostConfig
      : resolveHostConfig(flowOrConfig as DeployableFlow, options);
    this.#config = config;
    this.functionName = config.functionName;
    this.onEdge = config.edgeRuntime !== null;
    const { settings } = config.workers[0].config;
    this.#logger = new Logger(settings.logLevel, settings.logger, {
      function_name: config.functionName,
      isolate_id: this.isolateId,
    });
    this.#auth = config.secret === null ? null : new BearerAuth(config.secret);
    if (this.#auth === null) this.#logger.error(noSecretMessage(config.functionName));
    // The pool opens last: nothing after it may throw, or it would be left behind.
    const { connection } = config;
    this.#sql = connection.kind === "given"
      ? connection.sql
      : connection.kind === "url"
      ? connect(connection.url, {
        max: connection.poolSize,
        applicationName: `sluice-edge:${config.functionName}`,
      })
      : null;
    // A pool of the caller's own keeps the driver's reconnect timer; its wait is bounded instead.
    if (connection.kind === "given") boundDriverBackoff(connection.sql);
    config.lifecycle?.addEventListener("beforeunload", this.#onBeforeUnload);
  }

  readonly fetch = async (request: Request): Promise<Response> => {
    const response = await answerRequest(
      request,
      this.functionName,
      this.#auth,
      () => this.start(),
    );
    // What the invocation recorded is exported before the platform may freeze the isolate.
    this.#flushTelemetry();
    return response;
  };

  /** Flushes the telemetry hook (if any) under `waitUntil`; a failure is logged. */
  #flushTelemetry(): Promise<void> {
    const flush = this.#config.flushTelemetry;
    if (flush === null) return Promise.resolve();
    const flushed = flush().catch((error) => {
      this.#logger.warn("telemetry flush failed", { error: describeError(error) });
    });
    this.#config.edgeRuntime?.waitUntil(flushed);
    return flushed;
  }

  get status(): WorkerFunctionStatus {
    const worker = this.#worker;
    if (this.#ending !== null) {
      return this.#snapshot(this.#endComplete ? "stopped" : "draining", {
        worker,
        reason: this.#ending,
      });
    }
    if (worker !== null) {
      const state: WorkerFunctionState = worker.fatal
        ? "paused"
        : worker.running
        ? "running"
        : "draining";
      return this.#snapshot(state, { worker });
    }
    if (this.#starting !== null) return this.#snapshot("starting");
    return this.#lastOutcome ?? this.#snapshot("idle");
  }

  start(): Promise<WorkerFunctionStatus> {
    if (this.#ending !== null || this.#worker !== null || this.#starting !== null) {
      return Promise.resolve(this.status);
    }
    if (this.#sql === null) {
      return Promise.resolve(
        this.#snapshot("failed", { error: noConnectionMessage(this.functionName) }),
      );
    }
    const launch = this.#launch(this.#sql);
    this.#starting = launch.then((outcome) => outcome.worker);
    const life = launch.then(async ({ worker }) => {
      this.#starting = null;
      if (worker !== null) await this.#supervise(worker);
    }).catch((error) => {
      this.#logger.error("worker supervision failed", { error: describeError(error) });
    }).then(() => this.#flushTelemetry());
    this.#life = life;
    this.#config.edgeRuntime?.waitUntil(life);
    return launch.then((outcome) => outcome.status);
  }

  end(): Promise<void> {
    return this.#end("requested", this.#config.respawn);
  }

  close(): Promise<void> {
    return this.#end("closed", false);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #onBeforeUnload = (): void => {
    void this.#end("beforeunload", this.#config.respawn);
  };

  /** Consults the function's row, then starts the worker. Never rejects. */
  async #launch(sql: Sql): Promise<Launch> {
    try {
      const state = await readFunctionState(sql, this.functionName);
      if (state !== null && !state.enabled) {
        return this.#idleWith(this.#snapshot("disabled"));
      }
      if (state !== null && state.restartPausedAt !== null) {
        return this.#idleWith(this.#snapshot("paused", {
          reason: state.pauseReason ?? undefined,
          pausedAt: state.restartPausedAt,
        }));
      }
      if (this.#ending !== null) return { worker: null, status: this.status };
      const worker = new Workers(
        await launchWorkerGroup(
          this.#config.workers.map(({ flow, config }: HostedWorker) => ({
            flow,
            config: { ...config, connection: { kind: "given", sql } },
          })),
        ),
        this.#logger,
      );
      this.#seenInvokedAt = state?.lastInvokedAt ?? null;
      this.#worker = worker;
      this.#lastOutcome = null;
      if (this.#ending === null) this.#armWallClockBudget();
      return { worker, status: this.status };
    } catch (error) {
      const description = describeError(error);
      this.#logger.error("cannot start the worker", { error: description });
      return this.#idleWith(this.#snapshot("failed", { error: description }));
    }
  }

  #idleWith(status: WorkerFunctionStatus): Launch {
    this.#lastOutcome = status;
    return { worker: null, status };
  }

  /** Waits for the workers to stop and records why they did, unless the isolate is ending. */
  async #supervise(worker: Workers): Promise<void> {
    await worker.done;
    this.#worker = null;
    clearTimeout(this.#budgetTimer);
    if (this.#ending !== null) return;
    if (worker.fatal) {
      // The worker logged the fatal error itself; the pause is already committed by the claim.
      this.#lastOutcome = this.#snapshot("paused");
      this.#logger.warn(
        "worker stopped on unsupported work: no successor; requests answer paused until an " +
          "operator clears the pause (sluice.clear_restart_pause)",
        { worker_ids: worker.ids },
      );
    } else {
      this.#lastOutcome = this.#snapshot("stopped");
      // Deprecated by a rollout (or its poll loop failed): nothing asked this isolate to end, so
      // no successor; the next request starts a worker again after consulting the function's row.
      this.#logger.info("worker stopped by itself: no successor requested", {
        worker_ids: worker.ids,
      });
    }
  }

  #armWallClockBudget(): void {
    const budgetMs = this.#config.wallClockBudgetMs;
    if (!this.onEdge || !Number.isFinite(budgetMs)) return;
    const remaining = budgetMs - (performance.now() - this.#createdAt);
    this.#budgetTimer = setTimeout(
      () => void this.#end("wall_clock_budget", this.#config.respawn),
      Math.max(0, remaining),
    );
  }

  #end(reason: EndReason, respawn: boolean): Promise<void> {
    if (this.#ended === null) {
      this.#ending = reason;
      this.#ended = this.#runEnd(reason, respawn).catch((error) => {
        this.#logger.error("ending the isolate failed", { error: describeError(error) });
      }).then(() => this.#flushTelemetry()).finally(() => {
        this.#endComplete = true;
      });
      if (respawn) this.#config.edgeRuntime?.waitUntil(this.#ended);
    }
    return this.#ended;
  }

  async #runEnd(reason: EndReason, respawn: boolean): Promise<void> {
    clearTimeout(this.#budgetTimer);
    this.#config.lifecycle?.removeEventListener("beforeunload", this.#onBeforeUnload);
    const worker = this.#worker ?? await (this.#starting ?? null);
    if (worker !== null) {
      const wasRunning = worker.running;
      // An ending isolate drains by its deadline; a closed one by the worker's own grace.
      const ending = reason !== "closed";
      this.#logger.info("isolate ending: stopping the worker", {
        reason,
        worker_ids: worker.ids,
        drain_timeout_ms: ending ? this.#config.drainTimeoutMs : null,
      });
      const stopped = worker.stop(ending ? this.#config.drainGraceMs : undefined);
      if (respawn && wasRunning) {
        // The successor takes over the queue as soon as this worker reads no more: tasks still
        // in flight here are started and hidden, so it cannot claim them twice. The deadline only
        // guards against a read that hangs on a dead connection.
        if (!(await settlesWithin(worker.pollingStopped, this.#config.drainTimeoutMs))) {
          this.#logger.warn("polling did not stop in time: requesting the successor anyway", {
            worker_ids: worker.ids,
            drain_timeout_ms: this.#config.drainTimeoutMs,
          });
        }
        if (!worker.fatal) {
          await claimAndRequestSuccessor({
            sql: this.#sql as Sql,
            functionName: this.functionName,
            isolateId: this.isolateId,
            seenInvokedAt: this.#seenInvokedAt,
            selfUrl: this.#config.selfUrl,
            secret: this.#config.secret,
            reason,
            workerId: worker.first.workerId,
          }, this.#logger);
        }
      }
      await stopped;
    }
    await this.#life;
    if (this.#config.connection.kind === "url") await this.#sql?.end({ timeout: 5 });
  }

  #snapshot(
    status: WorkerFunctionState,
    details: {
      worker?: Workers | null;
      reason?: string;
      pausedAt?: string;
      error?: string;
    } = {},
  ): WorkerFunctionStatus {
    const { worker, reason, pausedAt, error } = details;
    return {
      status,
      functionName: this.functionName,
      isolateId: this.isolateId,
      ...(worker
        ? {
          workerId: worker.first.workerId,
          flowSlug: worker.first.flowSlug,
          queue: worker.first.queueName,
        }
        : {}),
      ...(worker && this.#config.workers.length > 1
        ? {
          workers: worker.all.map((w) => ({
            workerId: w.workerId,
            flowSlug: w.flowSlug,
            stepSlug: w.stepSlug,
            queue: w.queueName,
            status: w.status,
          })),
        }
        : {}),
      ...(reason === undefined ? {} : { reason }),
      ...(pausedAt === undefined ? {} : { pausedAt }),
      ...(error === undefined ? {} : { error }),
    };
  }
}

/** Whether `promise` settles within `ms`; the timer never outlives the wait. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: number | undefined;
  const expired = new Promise<false>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise.then(() => true, () => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}
