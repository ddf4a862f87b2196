/**
 * `startWorker()`: compiles a flow, registers a worker and starts polling its queue — the flow's
 * one queue for a plain flow, one step's private queue for a step-queued flow.
 *
 * @module
 */

import type { Sql } from "postgres";
import { type CompileEnvironment, compileFlow } from "../client/compile_flow.ts";
import { connect } from "../client/connect.ts";
import { type AnyFlow, Flow } from "../dsl/flow.ts";
import type { StepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow, StepSlug } from "../dsl/types.ts";
import { registerWorker, trackWorkerFunction } from "./_queries.ts";
import { QueueListener } from "./_queue_listener.ts";
import { type RuntimeSettings, WorkerRuntime } from "./_runtime.ts";
import { jsonLineSink, Logger, type LogLevel, type LogSink } from "./logger.ts";
import { resolveWorkerTarget, type WorkerTarget } from "./worker_target.ts";

/**
 * Where a worker is in its life: `running` (polling), `stopping` (draining after `stop()`,
 * deprecation), `stopped`, or `fatal` (it met work it must not touch and stopped for good; its
 * worker function is restart-paused).
 *
 * @example Usage
 * ```ts
 * import type { WorkerStatus } from "@sluice/sluice/worker";
 *
 * const status: WorkerStatus = "running";
 * ```
 */
export type WorkerStatus = "running" | "stopping" | "stopped" | "fatal";

/**
 * The options every worker takes, whatever its flow's queue mode. Give either `sql` or
 * `connectionString`. {@linkcode WorkerOptions} (plain flows) and {@linkcode StepWorkerOptions}
 * (step-queued flows) add the `stepSlug` rule of each mode.
 *
 * @example Usage
 * ```ts
 * import type { BaseWorkerOptions } from "@sluice/sluice/worker";
 *
 * const options: BaseWorkerOptions = {
 *   connectionString: "postgres://postgres:postgres@127.0.0.1:54322/postgres",
 *   maxConcurrent: 20,
 * };
 * ```
 */
export interface BaseWorkerOptions {
  /**
   * A postgres.js client to use (create it with `connect()`: no prepared statements). The worker
   * does not close it. One of `sql` and `connectionString` is required.
   */
  readonly sql?: Sql;
  /**
   * A connection URL: the worker opens its own pool (`poolSize` connections) and closes it when it
   * stops. One of `sql` and `connectionString` is required.
   */
  readonly connectionString?: string;
  /**
   * Pool size when the worker opens its own pool from `connectionString`. Handlers share it
   * through `context.sql`. The LISTEN connection comes on top.
   *
   * @default {4}
   */
  readonly poolSize?: number;
  /**
   * The worker function (deployable unit) this worker belongs to: its row carries the `enabled`
   * and restart-pause flags.
   *
   * @default {`workerFunctionName(flowSlug, stepSlug)` (a `null` step for a plain flow, e.g.
   * `greet-user`): the name `deno task gen:functions` gives its Edge Function}
   */
  readonly functionName?: string;
  /**
   * The compile environment: `production` never changes a compiled flow (a changed shape fails
   * startup with `FlowShapeMismatchError`); `development` recompiles it after its old workers
   * have drained.
   *
   * @default {"production"}
   */
  readonly environment?: CompileEnvironment;
  /**
   * Most tasks executing at once.
   *
   * @default {10}
   */
  readonly maxConcurrent?: number;
  /**
   * Most messages read in one round trip (never more than the free slots).
   *
   * @default {maxConcurrent}
   */
  readonly batchSize?: number;
  /**
   * Seconds a message read by this worker stays hidden before the claim sets its real visibility
   * (the task timeout + 2 s). Only matters if the worker dies between read and claim, which happen
   * in one statement.
   *
   * @default {30}
   */
  readonly visibilityTimeout?: number;
  /**
   * With LISTEN: the longest wait for a notification after an empty read before reading again
   * (a safety net; notifications normally wake the worker within milliseconds).
   *
   * @default {1000}
   */
  readonly pollIntervalMs?: number;
  /**
   * Without LISTEN (`listen: false`, or LISTEN failed, e.g. behind a transaction pooler): how
   * long one `pgmq.read_with_poll` call waits for messages, checking every 100 ms.
   *
   * @default {5}
   */
  readonly maxPollSeconds?: number;
  /**
   * Wake up on `NOTIFY sluice_queue_ready` over a dedicated session connection. Turn it off where
   * no session connection is available; the worker then long-polls.
   *
   * @default {true}
   */
  readonly listen?: boolean;
  /**
   * Interval between heartbeats. A heartbeat also tells the worker it was deprecated.
   *
   * @default {5000}
   */
  readonly heartbeatIntervalMs?: number;
  /**
   * Shortest interval between two runs of stalled-task recovery by this worker (run from the
   * heartbeat).
   *
   * @default {15000}
   */
  readonly stalledCheckIntervalMs?: number;
  /**
   * On `stop()`: how long in-flight tasks may take to finish before their signals abort and their
   * attempts fail (`stop({ graceMs })` overrides it for one stop).
   *
   * @default {10000}
   */
  readonly shutdownGraceMs?: number;
  /**
   * Lowest level logged. Fatal records are always logged.
   *
   * @default {"info"}
   */
  readonly logLevel?: LogLevel;
  /**
   * Receives log records.
   *
   * @default {jsonLineSink (JSON lines on stdout/stderr)}
   */
  readonly logger?: LogSink;
  /**
   * Environment passed to handlers as `context.env`.
   *
   * @default {Deno.env.toObject()}
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Options of {@linkcode startWorker} for a plain flow. Give either `sql` or `connectionString`.
 *
 * @example Usage
 * ```ts
 * import type { WorkerOptions } from "@sluice/sluice/worker";
 *
 * const options: WorkerOptions = {
 *   connectionString: "postgres://postgres:postgres@127.0.0.1:54322/postgres",
 *   maxConcurrent: 20,
 *   logLevel: "warn",
 * };
 * ```
 */
export interface WorkerOptions extends BaseWorkerOptions {
  /**
   * Only for step-queued flows (`withStepQueues`), not supported by plain-flow workers: a plain
   * flow's worker polls the flow's one queue and runs every step.
   */
  readonly stepSlug?: undefined;
}

/**
 * Options of {@linkcode startWorker} for a step-queued flow: every worker option plus the
 * required `stepSlug`, typed as the flow's step-slug union.
 *
 * @typeParam Slug The step slugs of the flow.
 *
 * @example Usage
 * ```ts
 * import type { StepWorkerOptions } from "@sluice/sluice/worker";
 *
 * const options: StepWorkerOptions<"fetch_posts" | "classify"> = {
 *   connectionString: "postgres://postgres:postgres@127.0.0.1:54322/postgres",
 *   stepSlug: "classify",
 *   maxConcurrent: 4,
 * };
 * ```
 */
export interface StepWorkerOptions<Slug extends string = string> extends BaseWorkerOptions {
  /**
   * The one step this worker serves: it polls that step's private queue and claims only that
   * step's tasks.
   */
  readonly stepSlug: Slug;
}

/**
 * Options of {@linkcode WorkerHandle.stop}.
 *
 * @example Usage
 * ```ts
 * import type { StopOptions } from "@sluice/sluice/worker";
 *
 * const options: StopOptions = { graceMs: 5000 };
 * ```
 */
export interface StopOptions {
  /**
   * How long in-flight tasks may take before their signals abort and their attempts fail,
   * counted from this call. A later call with a shorter grace brings the abort forward, never
   * back.
   *
   * @default {the worker's shutdownGraceMs}
   */
  readonly graceMs?: number;
}

/**
 * A running worker.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { startWorker, type WorkerHandle } from "@sluice/sluice/worker";
 *
 * const flow = new Flow({ slug: "hello" }).step({ slug: "greet" }, () => "hi");
 * const worker: WorkerHandle = await startWorker(flow, {
 *   connectionString: Deno.env.get("DATABASE_URL")!,
 * });
 * Deno.addSignalListener("SIGTERM", () => worker.stop());
 * await worker.done;
 * ```
 */
export interface WorkerHandle {
  /** The worker's id (a random UUID), as in `sluice.workers`. */
  readonly workerId: string;
  /** The worker function it belongs to. */
  readonly functionName: string;
  /** The queue it polls. */
  readonly queueName: string;
  /** The concrete slug of its flow. */
  readonly flowSlug: string;
  /** The step of a step worker; `null` for a plain flow's worker. */
  readonly stepSlug: string | null;
  /** Where the worker is in its life. */
  readonly status: WorkerStatus;
  /**
   * Stops polling, waits up to `graceMs` (default `shutdownGraceMs`) for in-flight tasks (then
   * aborts them and fails their attempts), reports every result, and marks the worker stopped.
   *
   * Rejects with a `RangeError`, changing nothing, when `graceMs` is not a finite number >= 0.
   *
   * @param options The grace period of this stop.
   */
  stop(options?: StopOptions): Promise<void>;
  /**
   * Resolves once the worker reads no more messages — after `stop()`, a deprecation or unsupported
   * work — while in-flight tasks may still run. `status` is then final as to `fatal`: a successor
   * can take over the queue from here.
   */
  readonly pollingStopped: Promise<void>;
  /** Resolves once the worker has stopped, whatever stopped it. */
  readonly done: Promise<void>;
}

/**
 * Starts a worker for a plain flow: it polls queue `lower(flow.slug)` and runs every step.
 *
 * Startup compiles the flow first (`compileFlow`; a failed compile leaves no trace), then tracks
 * the worker function and registers the worker. The returned promise rejects when any of that
 * fails. Once running, the worker rides out database outages, reports every result, heartbeats,
 * recovers stalled tasks, and stops when `stop()` is called, when it is deprecated (after draining
 * its in-flight tasks) or when it meets work it must not touch (status `fatal`).
 *
 * @param flow The flow whose steps the worker runs.
 * @param options Connection, concurrency, timing and logging options.
 * @returns A handle to the running worker.
 * @throws {StepSlugError} When a `stepSlug` is given: a plain flow's worker runs every step.
 * @throws {TypeError} When the options are inconsistent (no or two connection options).
 * @throws {RangeError} When a numeric option is out of range.
 * @throws {FlowShapeMismatchError} In production, when the flow is compiled with another shape.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { startWorker } from "@sluice/sluice/worker";
 *
 * const flow = new Flow<{ name: string }>({ slug: "greetings" })
 *   .step({ slug: "greet" }, (input) => `Hello, ${input.name}!`);
 * const worker = await startWorker(flow, {
 *   connectionString: Deno.env.get("DATABASE_URL")!,
 *   maxConcurrent: 5,
 * });
 * Deno.addSignalListener("SIGINT", () => worker.stop());
 * await worker.done;
 * ```
 */
export function startWorker<F extends AnyFlow>(
  flow: F,
  options: WorkerOptions,
): Promise<WorkerHandle>;
/**
 * Starts a step worker for a flow returned by `withStepQueues()`: it polls exactly the private
 * queue of `options.stepSlug` and claims only that `(flow, step)` pair's tasks. Every other step
 * needs workers of its own; until one runs, its tasks wait in its queue.
 *
 * `stepSlug` is required and typed as the flow's step-slug union; a missing or unknown one is a
 * type error, and a {@linkcode StepSlugError} listing the valid slugs before any database access.
 * Startup, running and stopping are those of a plain flow's worker.
 *
 * @param flow The step-queued flow.
 * @param options `stepSlug` plus connection, concurrency, timing and logging options.
 * @returns A handle to the running worker.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When the options are inconsistent (no or two connection options).
 * @throws {RangeError} When a numeric option is out of range.
 * @throws {FlowShapeMismatchError} In production, when the flow is compiled with another shape.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import { startWorker } from "@sluice/sluice/worker";
 *
 * const digest = withStepQueues(
 *   new Flow<{ text: string }>({ slug: "digest" })
 *     .step({ slug: "classify" }, (input) => input.text.includes("?") ? "question" : "comment")
 *     .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => deps.classify),
 * );
 * const worker = await startWorker(digest, {
 *   stepSlug: "classify", // polls queue "digest__classify"
 *   connectionString: Deno.env.get("DATABASE_URL")!,
 * });
 * await worker.done;
 * ```
 */
export function startWorker<Q extends StepQueuedFlow>(
  flow: Q,
  options: StepWorkerOptions<StepSlug<Q>>,
): Promise<WorkerHandle>;
export async function startWorker(
  flow: DeployableFlow,
  options: WorkerOptions | StepWorkerOptions,
): Promise<WorkerHandle> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot start worker: options are required");
  }
  // The overloads tied flow and options together; the implementation takes either pair.
  const target = (resolveWorkerTarget as (
    flow: DeployableFlow,
    options: WorkerOptions | StepWorkerOptions,
  ) => WorkerTarget)(flow, options);
  const settings = resolveSettings(target, options);
  const workerId = crypto.randomUUID();
  const logger = new Logger(options.logLevel ?? "info", options.logger ?? jsonLineSink, {
    worker_id: workerId,
    queue: target.queueName,
  });
  const plain = flow instanceof Flow ? flow : flow.flow;
  const handlers = new Map(
    plain.steps
      .filter((step) => target.stepSlugs.includes(step.slug))
      .map((step) => [step.slug, step.handler]),
  );

  const ownsPool = options.sql === undefined;
  const sql = options.sql ??
    connect(options.connectionString as string, {
      max: settings.poolSize,
      applicationName: `sluice-worker:${target.functionName}`,
    });
  let listener: QueueListener | null = null;
  try {
    const compiled = await compileFlow(sql, flow, { environment: settings.environment });
    if (ownsPool) stopRefetchingTypes(sql);
    const workerFunction = await trackWorkerFunction(sql, target.functionName);
    await registerWorker(sql, {
      workerId,
      functionName: target.functionName,
      queue: target.queueName,
      flowSlug: target.flowSlug,
      stepSlug: target.stepSlug,
    });
    if (workerFunction.restartPausedAt !== null) {
      logger.warn(
        "worker function is restart-paused; an operator clears it with " +
          "sluice.clear_restart_pause",
        {
          function_name: target.functionName,
          pause_reason: workerFunction.pauseReason,
        },
      );
    }
    if (options.listen !== false) {
      listener = await QueueListener.start(
        sql,
        target.queueName,
        logger,
        settings.heartbeatIntervalMs,
      );
    }
    const runtimeSettings: RuntimeSettings = {
      ...settings,
      workerId,
      functionName: target.functionName,
      queue: target.queueName,
      supported: target.stepSlugs.map((step) => ({
        flow_slug: target.flowSlug,
        step_slug: step,
      })),
      handlers,
      ownsPool,
    };
    const runtime = new WorkerRuntime(sql, logger, listener, runtimeSettings);
    runtime.start();
    logger.info("worker started", {
      function_name: target.functionName,
      flow_slug: target.flowSlug,
      step_slug: target.stepSlug,
      compile_outcome: compiled.outcome,
      max_concurrent: settings.maxConcurrent,
      batch_size: settings.batchSize,
      wake_up: listener === null ? "long_poll" : "listen",
    });
    return {
      workerId,
      functionName: target.functionName,
      queueName: target.queueName,
      flowSlug: target.flowSlug,
      stepSlug: target.stepSlug,
      get status() {
        return runtime.status;
      },
      stop: (stopOptions?: StopOptions) => runtime.stop(stopOptions?.graceMs),
      pollingStopped: runtime.pollingStopped,
      done: runtime.done,
    };
  } catch (error) {
    await listener?.close();
    if (ownsPool) await sql.end({ timeout: 5 }).catch(() => {});
    throw error;
  }
}

type Settings =
  & Omit<
    RuntimeSettings,
    "workerId" | "functionName" | "queue" | "supported" | "handlers" | "ownsPool"
  >
  & {
    readonly environment: CompileEnvironment;
    readonly poolSize: number;
  };

function resolveSettings(target: WorkerTarget, options: BaseWorkerOptions): Settings {
  const fail = (message: string): never => {
    throw new TypeError(
      `Cannot start worker for flow ${JSON.stringify(target.flowSlug)}: ${message}`,
    );
  };
  const hasSql = options.sql !== undefined;
  const hasUrl = options.connectionString !== undefined;
  if (hasSql === hasUrl) {
    fail(
      hasSql
        ? "give either sql or connectionString, not both"
        : "give sql (a postgres.js client) or connectionString (a connection URL)",
    );
  }
  if (hasUrl && (typeof options.connectionString !== "string" || options.connectionString === "")) {
    fail("connectionString must be a non-empty string");
  }
  const environment = options.environment ?? "production";
  if (environment !== "production" && environment !== "development") {
    fail(`environment must be "production" or "development", got ${JSON.stringify(environment)}`);
  }
  const range = (
    name: keyof BaseWorkerOptions,
    fallback: number,
    min: number,
    integer: boolean,
  ) => {
    const value = options[name] ?? fallback;
    if (
      typeof value !== "number" || !Number.isFinite(value) || value < min ||
      (integer && !Number.isInteger(value))
    ) {
      throw new RangeError(
        `Cannot start worker for flow ${JSON.stringify(target.flowSlug)}: ${name} must be ${
          integer ? "an integer" : "a number"
        } >= ${min}, got ${String(value)}`,
      );
    }
    return value;
  };
  const maxConcurrent = range("maxConcurrent", 10, 1, true);
  return {
    environment,
    poolSize: range("poolSize", 4, 1, true),
    env: options.env ?? processEnv(),
    maxConcurrent,
    batchSize: range("batchSize", maxConcurrent, 1, true),
    visibilityTimeout: range("visibilityTimeout", 30, 1, true),
    pollIntervalMs: range("pollIntervalMs", 1000, 1, false),
    maxPollSeconds: range("maxPollSeconds", 5, 1, true),
    heartbeatIntervalMs: range("heartbeatIntervalMs", 5000, 1, false),
    stalledCheckIntervalMs: range("stalledCheckIntervalMs", 15000, 0, false),
    shutdownGraceMs: range("shutdownGraceMs", 10000, 0, false),
  };
}

/**
 * postgres.js fetches the server's array types as the first statement of every new connection and
 * drops that promise: a connection terminated at that moment surfaces as an unhandled rejection
 * that no caller can catch (porsager/postgres#1192, #1223). The types are stored on the pool's
 * shared options once fetched, so after the first query of a pool the worker owns, reconnections
 * skip the fetch and the window closes.
 */
function stopRefetchingTypes(sql: Sql): void {
  (sql.options as { fetch_types: boolean }).fetch_types = false;
}

function processEnv(): Record<string, string> {
  try {
    return Deno.env.toObject();
  } catch {
    // No --allow-env: handlers get an empty environment.
    return {};
  }
}
