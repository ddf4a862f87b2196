/**
 * `startWorker()`: compiles a flow, registers a worker and starts polling the flow's queue.
 *
 * @module
 */

import type { Sql } from "postgres";
import { type CompileEnvironment, compileFlow } from "../client/compile_flow.ts";
import { connect } from "../client/connect.ts";
import { extractDefinition } from "../dsl/definition.ts";
import { type AnyFlow, Flow } from "../dsl/flow.ts";
import type { StepHandler } from "../dsl/step_definition.ts";
import { registerWorker, type SupportedRoute, trackWorkerFunction } from "./_queries.ts";
import { QueueListener } from "./_queue_listener.ts";
import { type RuntimeSettings, WorkerRuntime } from "./_runtime.ts";
import { jsonLineSink, Logger, type LogLevel, type LogSink } from "./logger.ts";

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
 * Options of {@linkcode startWorker}. Give either `sql` or `connectionString`.
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
export interface WorkerOptions {
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
   * @default {the flow slug}
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
   * attempts fail.
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
  /**
   * Only for step-queued flows (`withStepQueues`), not supported by plain-flow workers: a plain
   * flow's worker polls the flow's one queue and runs every step.
   */
  readonly stepSlug?: undefined;
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
  /** Where the worker is in its life. */
  readonly status: WorkerStatus;
  /**
   * Stops polling, waits up to `shutdownGraceMs` for in-flight tasks (then aborts them and fails
   * their attempts), reports every result, and marks the worker stopped.
   */
  stop(): Promise<void>;
  /** Resolves once the worker has stopped, whatever stopped it. */
  readonly done: Promise<void>;
}

/** What a worker serves: its queue and the routes it can run. */
interface WorkerTarget {
  readonly flowSlug: string;
  readonly queue: string;
  readonly stepSlug: string | null;
  readonly supported: readonly SupportedRoute[];
  readonly handlers: ReadonlyMap<string, StepHandler>;
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
 * @throws {TypeError} When the options are inconsistent (no or two connection options, a
 * `stepSlug` for a plain flow).
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
export async function startWorker<F extends AnyFlow>(
  flow: F,
  options: WorkerOptions,
): Promise<WorkerHandle> {
  const target = resolveTarget(flow, options);
  const settings = resolveSettings(target, options);
  const workerId = crypto.randomUUID();
  const logger = new Logger(options.logLevel ?? "info", options.logger ?? jsonLineSink, {
    worker_id: workerId,
    queue: target.queue,
  });

  const ownsPool = options.sql === undefined;
  const sql = options.sql ??
    connect(options.connectionString as string, {
      max: settings.poolSize,
      applicationName: `sluice-worker:${settings.functionName}`,
    });
  let listener: QueueListener | null = null;
  try {
    const compiled = await compileFlow(sql, flow, { environment: settings.environment });
    if (ownsPool) stopRefetchingTypes(sql);
    const workerFunction = await trackWorkerFunction(sql, settings.functionName);
    await registerWorker(sql, {
      workerId,
      functionName: settings.functionName,
      queue: target.queue,
      flowSlug: target.flowSlug,
      stepSlug: target.stepSlug,
    });
    if (workerFunction.restartPausedAt !== null) {
      logger.warn(
        "worker function is restart-paused; an operator clears it with " +
          "sluice.clear_restart_pause",
        {
          function_name: settings.functionName,
          pause_reason: workerFunction.pauseReason,
        },
      );
    }
    if (options.listen !== false) {
      listener = await QueueListener.start(
        sql,
        target.queue,
        logger,
        settings.heartbeatIntervalMs,
      );
    }
    const runtimeSettings: RuntimeSettings = {
      ...settings,
      workerId,
      queue: target.queue,
      supported: target.supported,
      handlers: target.handlers,
      ownsPool,
    };
    const runtime = new WorkerRuntime(sql, logger, listener, runtimeSettings);
    runtime.start();
    logger.info("worker started", {
      function_name: settings.functionName,
      flow_slug: target.flowSlug,
      compile_outcome: compiled.outcome,
      max_concurrent: settings.maxConcurrent,
      batch_size: settings.batchSize,
      wake_up: listener === null ? "long_poll" : "listen",
    });
    return {
      workerId,
      functionName: settings.functionName,
      queueName: target.queue,
      flowSlug: target.flowSlug,
      get status() {
        return runtime.status;
      },
      stop: () => runtime.stop(),
      done: runtime.done,
    };
  } catch (error) {
    await listener?.close();
    if (ownsPool) await sql.end({ timeout: 5 }).catch(() => {});
    throw error;
  }
}

/** The queue and routes of a worker for `flow`; the seam where step-queued workers plug in. */
function resolveTarget(flow: AnyFlow, options: WorkerOptions): WorkerTarget {
  if (!(flow instanceof Flow)) {
    throw new TypeError(
      "Cannot start worker: expected a Flow (workers for step-queued or routed flows are not " +
        "supported by this version of startWorker)",
    );
  }
  const stepSlug = (options as { stepSlug?: unknown }).stepSlug;
  if (stepSlug !== undefined) {
    throw new TypeError(
      `Cannot start worker for flow ${JSON.stringify(flow.slug)}: stepSlug ${
        JSON.stringify(stepSlug)
      } is only for step-queued flows. A plain flow's worker polls queue ${
        JSON.stringify(flow.slug.toLowerCase())
      } and runs every step: remove stepSlug, or wrap the flow with withStepQueues(flow) to give ` +
        `each step its own queue and worker`,
    );
  }
  const definition = extractDefinition(flow);
  return {
    flowSlug: definition.flow_slug,
    queue: definition.routes[0].queue_name,
    stepSlug: null,
    supported: definition.steps.map((step) => ({
      flow_slug: definition.flow_slug,
      step_slug: step.step_slug,
    })),
    handlers: new Map(flow.steps.map((step) => [step.slug, step.handler])),
  };
}

type Settings =
  & Omit<
    RuntimeSettings,
    "workerId" | "queue" | "supported" | "handlers" | "ownsPool"
  >
  & {
    readonly functionName: string;
    readonly environment: CompileEnvironment;
    readonly poolSize: number;
  };

function resolveSettings(target: WorkerTarget, options: WorkerOptions): Settings {
  const fail = (message: string): never => {
    throw new TypeError(
      `Cannot start worker for flow ${JSON.stringify(target.flowSlug)}: ${message}`,
    );
  };
  if (typeof options !== "object" || options === null) fail("options are required");
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
  const functionName = options.functionName ?? target.flowSlug;
  if (typeof functionName !== "string" || functionName === "") {
    fail(`functionName must be a non-empty string, got ${JSON.stringify(functionName)}`);
  }
  const environment = options.environment ?? "production";
  if (environment !== "production" && environment !== "development") {
    fail(`environment must be "production" or "development", got ${JSON.stringify(environment)}`);
  }
  const range = (name: keyof WorkerOptions, fallback: number, min: number, integer: boolean) => {
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
    functionName,
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
