/**
 * `startWorker()`: compiles a flow, registers a worker and starts polling its queue — the flow's
 * one queue for a plain flow, one step's private queue for a step-queued flow; a deployed flow's
 * worker is the wrapped flow's, and may activate the alias once it runs.
 *
 * @module
 */

import type { CompileEnvironment } from "../deploy/compile_types.ts";
import { compileFlowGeneration } from "../deploy/compile.ts";
import { connect } from "../db/connect.ts";
import type { Sql } from "../db/postgres.ts";
import { stopRefetchingTypes } from "../db/fetch_types.ts";
import { registerWorker, trackWorkerFunction } from "../db/worker_queries.ts";
import { eitherMode } from "../dsl/either_mode.ts";
import type { DeployedFlow } from "../dsl/deployed_flow.ts";
import type { AnyFlow } from "../dsl/flow.ts";
import { DEFAULT_MAX_JSON_BYTES } from "../dsl/json_text.ts";
import { routingOf } from "../dsl/routing.ts";
import type { StepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow, StepSlug } from "../dsl/types.ts";
import { activateOnStartup } from "./_alias_activation.ts";
import { QueueListener } from "./_queue_listener.ts";
import { type RuntimeSettings, WorkerRuntime } from "./_runtime.ts";
import { jsonLineSink, Logger } from "./logger.ts";
import type {
  AliasActivationOptions,
  AliasActivationResult,
  BaseWorkerOptions,
  StepWorkerOptions,
  StopOptions,
  WorkerHandle,
  WorkerOptions,
} from "./worker_options.ts";
import { resolveWorkerConfig } from "./worker_config.ts";
import { resolveWorkerTarget, type WorkerTarget } from "./worker_target.ts";

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
/**
 * Starts a worker for a deployed plain flow (`defineDeployedFlow(flow, { alias })`): exactly the
 * worker of the wrapped flow, which also activates the alias once it runs when
 * `activate: "on-startup"` is set.
 *
 * With `"on-startup"`, after compiling, registering and starting to poll, the worker reads the
 * alias: if it already points at this concrete flow nothing changes; else it activates it by
 * compare-and-swap from the generation it read (recorded as `worker <id> (<function name>)`). A
 * lost race or a step without a live worker is logged and not retried; any other failure is
 * logged as an error. The worker keeps serving in every case; `handle.aliasActivation` and the
 * "worker started" log record say what happened.
 *
 * @param flow A deployed plain flow.
 * @param options `activate` plus the options of a plain flow's worker.
 * @returns A handle to the running worker.
 * @throws {StepSlugError} When a `stepSlug` is given.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`, or the options
 * are inconsistent.
 * @throws {RangeError} When a numeric option is out of range.
 * @throws {FlowShapeMismatchError} In production, when the flow is compiled with another shape.
 *
 * @example Usage
 * ```ts ignore
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { startWorker } from "@sluice/sluice/worker";
 *
 * const greetingsV2 = new Flow<{ name: string }>({ slug: "greetings_v2" })
 *   .step({ slug: "greet" }, (input) => `Hi, ${input.name}!`);
 * const greetings = defineDeployedFlow(greetingsV2, { alias: "greetings" });
 * const worker = await startWorker(greetings, {
 *   connectionString: Deno.env.get("DATABASE_URL")!,
 *   activate: "on-startup",
 * });
 * console.log(worker.aliasActivation); // { alias: "greetings", outcome: "activated", generation: 2 }
 * ```
 */
export function startWorker<F extends AnyFlow>(
  flow: DeployedFlow<F>,
  options: WorkerOptions & AliasActivationOptions,
): Promise<WorkerHandle>;
/**
 * Starts one step's worker for a deployed step-queued flow: exactly the step worker of the
 * wrapped flow (`stepSlug` required), which also activates the alias once it runs when
 * `activate: "on-startup"` is set. The activation succeeds only when every step has a live
 * worker: with every step's worker set to `"on-startup"`, the last one to start activates, the
 * earlier ones report `workers_missing`.
 *
 * @param flow A deployed step-queued flow.
 * @param options `stepSlug`, `activate` plus the options of a step worker.
 * @returns A handle to the running worker.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`, or the options
 * are inconsistent.
 * @throws {RangeError} When a numeric option is out of range.
 * @throws {FlowShapeMismatchError} In production, when the flow is compiled with another shape.
 *
 * @example Usage
 * ```ts ignore
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 * import { startWorker } from "@sluice/sluice/worker";
 *
 * const digestV2 = withStepQueues(
 *   new Flow<{ text: string }>({ slug: "digest_v2" })
 *     .step({ slug: "classify" }, (input) => input.text.length)
 *     .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => deps.classify),
 * );
 * const digest = defineDeployedFlow(digestV2, { alias: "digest" });
 * const worker = await startWorker(digest, {
 *   stepSlug: "deliver",
 *   connectionString: Deno.env.get("DATABASE_URL")!,
 *   activate: "on-startup",
 * });
 * ```
 */
export function startWorker<D extends DeployedFlow<StepQueuedFlow>>(
  flow: D,
  options: StepWorkerOptions<StepSlug<D>> & AliasActivationOptions,
): Promise<WorkerHandle>;
export async function startWorker(
  flow: DeployableFlow,
  options: (WorkerOptions | StepWorkerOptions) & AliasActivationOptions,
): Promise<WorkerHandle> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError("Cannot start worker: options are required");
  }
  const target = eitherMode<WorkerOptions | StepWorkerOptions, WorkerTarget>(
    resolveWorkerTarget,
  )(flow, options);
  const context = `Cannot start worker for flow ${JSON.stringify(target.flowSlug)}`;
  const { env, connection } = resolveWorkerConfig(options, { context });
  if (connection.kind === "none") {
    throw new TypeError(
      `${context}: give sql (a postgres.js client) or connectionString (a connection URL)`,
    );
  }
  const settings = resolveSettings(
    context,
    options,
    routingOf(flow).flow.options.maxOutputBytes ?? DEFAULT_MAX_JSON_BYTES,
  );
  const workerId = crypto.randomUUID();
  const logger = new Logger(options.logLevel ?? "info", options.logger ?? jsonLineSink, {
    worker_id: workerId,
    queue: target.queueName,
  });
  const plain = routingOf(flow).flow;
  const handlers = new Map(
    plain.steps
      .filter((step) => target.stepSlugs.includes(step.slug))
      .map((step) => [step.slug, step.handler]),
  );

  const ownsPool = connection.kind === "url";
  const sql = connection.kind === "given" ? connection.sql : connect(connection.url, {
    max: connection.poolSize,
    applicationName: `sluice-worker:${target.functionName}`,
  });
  let listener: QueueListener | null = null;
  try {
    const compiled = await compileFlowGeneration(sql, flow, {
      environment: settings.environment,
    });
    if (ownsPool) stopRefetchingTypes(sql);
    const workerFunction = await trackWorkerFunction(sql, target.functionName);
    await registerWorker(sql, {
      workerId,
      functionName: target.functionName,
      queue: target.queueName,
      flowSlug: target.flowSlug,
      stepSlug: target.stepSlug,
      flowGeneration: compiled.generation,
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
      env,
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
    const aliasActivation = await aliasActivationOf(sql, logger, target, workerId);
    logger.info("worker started", {
      function_name: target.functionName,
      flow_slug: target.flowSlug,
      step_slug: target.stepSlug,
      compile_outcome: compiled.outcome,
      max_concurrent: settings.maxConcurrent,
      batch_size: settings.batchSize,
      wake_up: listener === null ? "long_poll" : "listen",
      ...(aliasActivation === null ? {} : {
        alias: aliasActivation.alias,
        alias_activation: aliasActivation.outcome,
        alias_generation: aliasActivation.generation,
      }),
    });
    return {
      workerId,
      functionName: target.functionName,
      queueName: target.queueName,
      flowSlug: target.flowSlug,
      stepSlug: target.stepSlug,
      aliasActivation,
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

/** What a deployed flow's worker does with its alias at startup; `null` for a concrete flow. */
async function aliasActivationOf(
  sql: Sql,
  logger: Logger,
  target: WorkerTarget,
  workerId: string,
): Promise<AliasActivationResult | null> {
  if (target.alias === null) return null;
  if (target.activate !== "on-startup") {
    return Object.freeze({ alias: target.alias, outcome: "manual", generation: null });
  }
  return Object.freeze(
    await activateOnStartup(sql, logger, {
      alias: target.alias,
      flowSlug: target.flowSlug,
      workerId,
      functionName: target.functionName,
    }),
  );
}

type Settings =
  & Omit<
    RuntimeSettings,
    "workerId" | "functionName" | "queue" | "supported" | "handlers" | "ownsPool" | "env"
  >
  & { readonly environment: CompileEnvironment };

/** The worker-only options, checked; `maxOutputBytes` defaults to the flow's limit. */
function resolveSettings(
  context: string,
  options: BaseWorkerOptions,
  flowMaxOutputBytes: number,
): Settings {
  const environment = options.environment ?? "production";
  if (environment !== "production" && environment !== "development") {
    throw new TypeError(
      `${context}: environment must be "production" or "development", got ${
        JSON.stringify(environment)
      }`,
    );
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
        `${context}: ${name} must be ${integer ? "an integer" : "a number"} >= ${min}, got ${
          String(value)
        }`,
      );
    }
    return value;
  };
  const maxConcurrent = range("maxConcurrent", 10, 1, true);
  return {
    environment,
    maxConcurrent,
    batchSize: range("batchSize", maxConcurrent, 1, true),
    visibilityTimeout: range("visibilityTimeout", 30, 1, true),
    pollIntervalMs: range("pollIntervalMs", 1000, 1, false),
    maxPollSeconds: range("maxPollSeconds", 5, 1, true),
    heartbeatIntervalMs: range("heartbeatIntervalMs", 5000, 1, false),
    stalledCheckIntervalMs: range("stalledCheckIntervalMs", 15000, 0, false),
    shutdownGraceMs: range("shutdownGraceMs", 10000, 0, false),
    maxOutputBytes: range("maxOutputBytes", flowMaxOutputBytes, 1, true),
  };
}
