/**
 * `startWorker()`: compiles a flow, registers a worker and starts polling its queue — the flow's
 * one queue for a plain flow, one step's private queue for a step-queued flow; a deployed flow's
 * worker is the wrapped flow's, and may activate the alias once it runs.
 *
 * @module
 */

import { compileFlowGeneration } from "../deploy/compile.ts";
import { connect } from "../db/connect.ts";
import { boundDriverBackoff } from "../db/driver/reconnect.ts";
import type { Sql } from "../db/driver/postgres.ts";
import { stopRefetchingTypes } from "../db/driver/fetch_types.ts";
import { registerWorker, trackWorkerFunction } from "../db/worker_queries.ts";
import { routingOf } from "../dsl/routing.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { activateOnStartup } from "./_alias_activation.ts";
import { handlerWithInputCheck } from "./_input_schema.ts";
import { SweepDuty } from "./_heartbeat.ts";
import { ListenerSession, QueueListener, type WakeSession } from "./_queue_listener.ts";
import { PollSession } from "./_queue_poller.ts";
import { type RuntimeSettings, WorkerRuntime } from "./_runtime.ts";
import { Logger } from "./logger.ts";
import { OutageTracker, retryTransient } from "./_retry.ts";
import type {
  AliasActivationResult,
  FlowOptionsArgument,
  StopOptions,
  WorkerHandle,
  WorkerOptions,
} from "./worker_options.ts";
import { DATABASE_URL_VARIABLES, resolveWorkerConfig, type WorkerConfig } from "./worker_config.ts";
import type { WorkerTarget } from "./worker_target.ts";
import { waitStepsByDependency } from "./_wait_parameters.ts";

/**
 * Starts a worker for `flow`: it compiles the flow, registers itself and polls one queue.
 *
 * - A plain flow's worker polls queue `lower(flow.slug)` and runs every step; it takes no
 *   `stepSlug`.
 * - A step-queued flow's worker (`withStepQueues()`) serves one step: `options.stepSlug`, required
 *   and typed as the flow's step-slug union. It polls exactly that step's private queue and claims
 *   only that `(flow, step)` pair's tasks; every other step needs workers of its own.
 * - A deployed flow's worker (`defineDeployedFlow()`) is exactly the wrapped flow's worker
 *   (`stepSlug` as for the wrapped flow). With `activate: "on-startup"` it also points the alias
 *   at its concrete flow once it runs, by compare-and-swap on the generation it read; that
 *   succeeds only when every step has a live worker. A lost race or a missing worker is logged
 *   and not retried; `handle.aliasActivation` and the "worker started" log record say what
 *   happened, and the worker keeps serving either way.
 *
 * The options are keyed on the flow ({@linkcode WorkerOptions}): a missing or unknown `stepSlug`,
 * one for a plain flow, or `activate` for a concrete flow is a type error, and at run time a
 * {@linkcode StepSlugError} (or `TypeError`) naming the bad value, before any database access.
 *
 * Startup compiles the flow first (`compileFlow`; a failed compile leaves no trace), then tracks
 * the worker function and registers the worker. The returned promise rejects when any of that
 * fails. Once running, the worker rides out database outages, reports every result, heartbeats,
 * recovers stalled tasks, and stops when `stop()` is called, when it is deprecated (after draining
 * its in-flight tasks) or when it meets work it must not touch (status `fatal`).
 *
 * @typeParam F The flow: plain, step-queued or deployed.
 * @param flow The flow whose steps the worker runs.
 * @param options Connection, concurrency, timing and logging options, plus `stepSlug` (a
 * step-queued flow) and `activate` (a deployed flow).
 * @returns A handle to the running worker.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of a step-queued flow, or given
 * for a plain flow; the error lists the valid slugs.
 * @throws {TypeError} When the options are inconsistent (no or two connection options), or
 * `activate` is given for a concrete flow or is neither `"on-startup"` nor `"manual"`.
 * @throws {RangeError} When a numeric option is out of range.
 * @throws {FlowShapeMismatchError} In production, when the flow is compiled with another shape.
 *
 * @example A plain flow
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
 *
 * @example One step of a step-queued flow
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
 *
 * @example A deployed flow that activates its alias
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
export async function startWorker<F extends DeployableFlow>(
  flow: F,
  ...[options]: FlowOptionsArgument<F, WorkerOptions<F>>
): Promise<WorkerHandle> {
  const config = resolveWorkerConfig(flow, (options ?? {}) as WorkerOptions, {
    action: "start worker",
    context: (target) => `Cannot start worker for flow ${JSON.stringify(target.flowSlug)}`,
    urlVariables: DATABASE_URL_VARIABLES,
  });
  return await launchWorker(flow, config);
}

/**
 * Starts a worker from options resolved by `resolveWorkerConfig()`: what `startWorker()` and the
 * Edge host (with its own pool as the connection) both run. Not part of the public API.
 *
 * @param flow The flow the configuration was resolved for.
 * @param config Its resolved options; a connection of kind `none` is refused.
 * @returns A handle to the running worker.
 */
export async function launchWorker(
  flow: DeployableFlow,
  config: WorkerConfig,
  shared?: { readonly wake: WakeSession; readonly sweeps: SweepDuty },
): Promise<WorkerHandle> {
  const { target, env, connection, settings } = config;
  if (connection.kind === "none") {
    throw new TypeError(
      `Cannot start worker for flow ${JSON.stringify(target.flowSlug)}: give sql ` +
        "(a postgres.js client) or connectionString (a connection URL), or set " +
        DATABASE_URL_VARIABLES.join(", "),
    );
  }
  const workerId = crypto.randomUUID();
  const logger = new Logger(settings.logLevel, settings.logger, {
    worker_id: workerId,
    queue: target.queueName,
  });
  const plain = routingOf(flow).flow;
  const handlers = new Map(
    plain.steps
      .filter((step) => target.stepSlugs.includes(step.slug) && step.wait === null)
      .map((step) => [step.slug, handlerWithInputCheck(plain.slug, plain.inputSchema, step)]),
  );
  const waits = waitStepsByDependency(plain.steps);

  const ownsPool = connection.kind === "url";
  const sql = connection.kind === "given" ? connection.sql : connect(connection.url, {
    max: connection.poolSize,
    applicationName: `sluice-worker:${target.functionName}`,
  });
  // A pool of the caller's own keeps the driver's reconnect timer; its wait is bounded instead.
  if (connection.kind === "given") boundDriverBackoff(sql);
  let listener: QueueListener | null = null;
  try {
    // A worker (re)started while the database restarts waits for it, up to startupTimeoutMs.
    const startup = new AbortController();
    const startupTimer = setTimeout(() => startup.abort(), settings.startupTimeoutMs);
    const compiled = await retryTransient(
      () => compileFlowGeneration(sql, flow, { environment: settings.environment }),
      { operation: "startup", outage: new OutageTracker(logger), signal: startup.signal },
    ).finally(() => clearTimeout(startupTimer));
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
    if (shared !== undefined) {
      listener = shared.wake.watch(target.queueName);
    } else if (settings.listen) {
      listener = await QueueListener.start(
        sql,
        target.queueName,
        logger,
        settings.heartbeatIntervalMs,
        settings.pollIntervalMs,
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
      waits,
      ownsPool,
      sweeps: shared?.sweeps,
    };
    const runtime = new WorkerRuntime(sql, logger, listener, runtimeSettings);
    runtime.start();
    const aliasActivation = await aliasActivationOf(sql, logger, target, workerId);
    logger.info("worker started", {
      function_name: target.functionName,
      flow_slug: target.flowSlug,
      step_slug: target.stepSlug,
      compile_outcome: compiled.outcome,
      ...(compiled.outcome === "recompiled" ? { deleted_runs: compiled.deletedRuns } : {}),
      max_concurrent: settings.maxConcurrent,
      batch_size: settings.batchSize,
      wake_up: listener === null ? "long_poll" : listener.wakeUp,
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

/** One worker of a group: its flow and resolved options. */
export interface GroupMember {
  readonly flow: DeployableFlow;
  readonly config: WorkerConfig;
}

/**
 * Starts the workers of one worker function in order (a co-hosting function's: one per step),
 * on the one pool they are given, with one wake-up session for all of them — a LISTEN session
 * when they listen and LISTEN works, else one poll connection ({@linkcode PollSession}), so that
 * no worker long-polls on the shared pool — and one worker at a time runs the process-wide sweeps
 * (schedules, due waits, stalled tasks, {@linkcode SweepDuty}): each keeps its own queue, poll
 * loop, slots (`maxConcurrent`), heartbeat beat and `sluice.workers` row.
 * When one cannot start, those already started stop and the error is thrown. Not part of the
 * public API (`serveWorkers` runs it).
 *
 * @throws {TypeError} When the members do not share one given pool.
 */
export async function launchWorkerGroup(
  members: readonly GroupMember[],
): Promise<WorkerHandle[]> {
  if (members.length === 1) return [await launchWorker(members[0].flow, members[0].config)];
  const { connection, settings, target } = members[0].config;
  if (
    connection.kind !== "given" ||
    members.some(({ config }) =>
      config.connection.kind !== "given" || config.connection.sql !== connection.sql
    )
  ) {
    throw new TypeError(
      `Cannot start the workers of function ${JSON.stringify(target.functionName)}: they must ` +
        "share one pool (the sql option)",
    );
  }
  const logger = new Logger(settings.logLevel, settings.logger, {
    function_name: target.functionName,
  });
  // The members share their options (serveWorkers gives them one set), so one session wakes all.
  const listeners = settings.listen
    ? await ListenerSession.open(
      connection.sql,
      logger,
      settings.heartbeatIntervalMs,
      settings.pollIntervalMs,
    )
    : null;
  const wake: WakeSession = listeners ??
    new PollSession(connection.sql, logger, settings.maxPollSeconds);
  // One sweep of schedules, waits and stalled tasks per beat for the whole group.
  const sweeps = new SweepDuty();
  const started: WorkerHandle[] = [];
  try {
    for (const { flow, config } of members) {
      started.push(
        await launchWorker(flow, config, { wake, sweeps }),
      );
    }
    return started;
  } catch (error) {
    await Promise.all(started.map((worker) => worker.stop({ graceMs: 0 })));
    await wake.close();
    throw error;
  }
}
