/**
 * `serveWorker()`: the whole body of a worker function's Edge Function entrypoint.
 *
 * @module
 */

import { eitherMode } from "../dsl/either_mode.ts";
import type { DeployedFlow } from "../dsl/deployed_flow.ts";
import type { AnyFlow } from "../dsl/flow.ts";
import type { StepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow, StepSlug } from "../dsl/types.ts";
import { jsonLineSink, Logger } from "../worker/logger.ts";
import { processEnv } from "../worker/worker_config.ts";
import type { AliasActivationOptions } from "../worker/worker_options.ts";
import { createWorkerHandler } from "./create_worker_handler.ts";
import type {
  StepWorkerFunctionOptions,
  WorkerFunctionHandler,
  WorkerFunctionOptions,
} from "./edge_options.ts";

/**
 * Where and how {@linkcode serveWorker} listens, on top of the handler's options.
 *
 * @example Usage
 * ```ts
 * import type { ServeListenOptions } from "@sluice/sluice/edge";
 *
 * const options: ServeListenOptions = { port: 8787, startImmediately: true };
 * ```
 */
export interface ServeListenOptions {
  /**
   * Port to listen on (`0`: any free port; see `addr`). Several generated functions served
   * locally side by side each get their own `PORT`.
   *
   * @default {env PORT (the `env` option, else the process environment), else 8000}
   */
  readonly port?: number;
  /**
   * Interface to listen on.
   *
   * @default {"0.0.0.0"}
   */
  readonly hostname?: string;
  /** Aborting it stops the worker (no successor) and closes the server. */
  readonly signal?: AbortSignal;
  /** Called once the server listens. @default {logs "listening" at info level} */
  readonly onListen?: (addr: Deno.NetAddr) => void;
  /**
   * Start the worker at once instead of on the first request (local development).
   *
   * @default {env SLUICE_WORKER_START_IMMEDIATELY is "true" or "1"}
   */
  readonly startImmediately?: boolean;
  /**
   * Outside Edge: stop gracefully on SIGINT and SIGTERM (the worker drains, then the server
   * closes). Never installed on Edge, where the platform ends isolates.
   *
   * @default {true}
   */
  readonly handleSignals?: boolean;
}

/**
 * Options of {@linkcode serveWorker} for a plain flow: the handler's options plus where to listen.
 *
 * @example Usage
 * ```ts
 * import type { ServeWorkerOptions } from "@sluice/sluice/edge";
 *
 * const options: ServeWorkerOptions = { port: 8787, startImmediately: true };
 * ```
 */
export interface ServeWorkerOptions extends WorkerFunctionOptions, ServeListenOptions {}

/**
 * Options of {@linkcode serveWorker} for one step of a step-queued flow: the required `stepSlug`,
 * the handler's options and where to listen.
 *
 * @typeParam Slug The step slugs of the flow.
 *
 * @example Usage
 * ```ts
 * import type { StepServeWorkerOptions } from "@sluice/sluice/edge";
 *
 * const options: StepServeWorkerOptions<"classify" | "deliver"> = {
 *   stepSlug: "classify",
 *   functionName: "thread-digest--classify",
 * };
 * ```
 */
export interface StepServeWorkerOptions<Slug extends string = string>
  extends StepWorkerFunctionOptions<Slug>, ServeListenOptions {}

/**
 * A served worker function.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { serveWorker, type WorkerServer } from "@sluice/sluice/edge";
 *
 * const flow = new Flow({ slug: "hello" }).step({ slug: "greet" }, () => "hi");
 * const served: WorkerServer = serveWorker(flow, { port: 0 });
 * console.log(served.addr.port);
 * await served.shutdown();
 * ```
 */
export interface WorkerServer extends AsyncDisposable {
  /** The request handler (status, `start()`, `end()`, `close()`). */
  readonly handler: WorkerFunctionHandler;
  /** Where the server listens. */
  readonly addr: Deno.NetAddr;
  /** Resolves once the server has closed. */
  readonly finished: Promise<void>;
  /** Stops the worker gracefully (no successor), then closes the server. */
  shutdown(): Promise<void>;
}

/**
 * Serves a worker function over HTTP: the whole body of an Edge Function entrypoint.
 *
 * On Supabase Edge (`EdgeRuntime` present) the first request carrying
 * `Authorization: Bearer <secret>` starts the worker inside `EdgeRuntime.waitUntil`, unless the
 * function's row says it is disabled or restart-paused; later requests answer its status as JSON.
 * When the platform announces the end of the isolate (`beforeunload`), or the wall-clock budget
 * runs out first, the worker stops polling, one successor is requested from the function's own
 * URL, debounced in PostgreSQL so that isolates ending together start one, and in-flight tasks
 * drain within `drainTimeoutMs`.
 *
 * As a plain Deno process it runs until SIGINT or SIGTERM, starting the worker on the first
 * request or at once (`startImmediately`).
 *
 * @param flow The flow whose steps the worker runs.
 * @param options Listening, worker, connection, authorization and lifecycle options.
 * @returns The served function.
 * @throws {StepSlugError} When a `stepSlug` is given: a plain flow's worker runs every step.
 * @throws {TypeError} When options are inconsistent.
 * @throws {RangeError} When a duration option or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * // supabase/functions/orders-worker/index.ts
 * import { serveWorker } from "@sluice/sluice/edge";
 * import { orders } from "../_flows/orders.ts";
 *
 * serveWorker(orders, { functionName: "orders-worker" });
 * ```
 */
export function serveWorker<F extends AnyFlow>(
  flow: F,
  options?: ServeWorkerOptions,
): WorkerServer;
/**
 * Serves the worker function of one step of a step-queued flow: the whole body of its Edge
 * Function entrypoint, as `deno task gen:functions` writes it. The worker polls that step's
 * private queue; everything else is as for a plain flow.
 *
 * @param flow A flow returned by `withStepQueues()`.
 * @param options `stepSlug` (required, typed as the flow's step-slug union) plus listening,
 * worker, connection, authorization and lifecycle options. `functionName` defaults to
 * `workerFunctionName(flowSlug, stepSlug)`, the generated function's name.
 * @returns The served function.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When options are inconsistent.
 * @throws {RangeError} When a duration option or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * // supabase/functions/thread-digest--classify/index.ts
 * import { serveWorker } from "@sluice/sluice/edge";
 * import * as flows from "../../../flows.ts";
 *
 * serveWorker(flows.threadDigest, {
 *   functionName: "thread-digest--classify",
 *   stepSlug: "classify",
 * });
 * ```
 */
export function serveWorker<Q extends StepQueuedFlow>(
  flow: Q,
  options: StepServeWorkerOptions<StepSlug<Q>>,
): WorkerServer;
/**
 * Serves the worker function of a deployed plain flow: the wrapped flow's, whose worker also
 * activates the alias at startup with `activate: "on-startup"` (see `startWorker`).
 *
 * @param flow A flow returned by `defineDeployedFlow()` around a plain flow.
 * @param options `activate` plus the options of a plain flow's `serveWorker`.
 * @returns The served function.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`, or options are
 * inconsistent.
 * @throws {RangeError} When a duration option or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { serveWorker } from "@sluice/sluice/edge";
 *
 * const v2 = new Flow({ slug: "greet_v2" }).step({ slug: "compose" }, () => "hi");
 * serveWorker(defineDeployedFlow(v2, { alias: "greet" }), { activate: "on-startup" });
 * ```
 */
export function serveWorker<F extends AnyFlow>(
  flow: DeployedFlow<F>,
  options?: ServeWorkerOptions & AliasActivationOptions,
): WorkerServer;
/**
 * Serves one step's worker function of a deployed step-queued flow: the wrapped flow's
 * (`stepSlug` required), whose worker also activates the alias at startup with
 * `activate: "on-startup"` once every step has a live worker.
 *
 * @param flow A flow returned by `defineDeployedFlow()` around a `withStepQueues()` flow.
 * @param options `stepSlug`, `activate` plus the options of a step's `serveWorker`.
 * @returns The served function.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`, or options are
 * inconsistent.
 * @throws {RangeError} When a duration option or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 * import { serveWorker } from "@sluice/sluice/edge";
 *
 * const v2 = withStepQueues(new Flow({ slug: "digest_v2" }).step({ slug: "classify" }, () => 1));
 * serveWorker(defineDeployedFlow(v2, { alias: "digest" }), { stepSlug: "classify" });
 * ```
 */
export function serveWorker<D extends DeployedFlow<StepQueuedFlow>>(
  flow: D,
  options: StepServeWorkerOptions<StepSlug<D>> & AliasActivationOptions,
): WorkerServer;
export function serveWorker(
  flow: DeployableFlow,
  options: (ServeWorkerOptions | StepServeWorkerOptions) & AliasActivationOptions = {},
): WorkerServer {
  const handler = eitherMode<
    (ServeWorkerOptions | StepServeWorkerOptions) & AliasActivationOptions,
    WorkerFunctionHandler
  >(createWorkerHandler)(flow, options);
  const logger = new Logger(options.logLevel ?? "info", options.logger ?? jsonLineSink, {
    function_name: handler.functionName,
    isolate_id: handler.isolateId,
  });
  const server = Deno.serve({
    port: options.port ?? portFromEnv(handler.functionName, options.env ?? processEnv()),
    hostname: options.hostname,
    onListen: options.onListen ??
      ((addr) => logger.info("listening", { hostname: addr.hostname, port: addr.port })),
  }, handler.fetch);

  const signals: Deno.Signal[] = [];
  const onSignal = () => {
    logger.info("signal received: stopping the worker and the server");
    void shutdown();
  };
  let closing: Promise<void> | null = null;
  const shutdown = (): Promise<void> =>
    closing ??= (async () => {
      for (const signal of signals) Deno.removeSignalListener(signal, onSignal);
      options.signal?.removeEventListener("abort", onAbort);
      await handler.close();
      await server.shutdown();
    })();
  const onAbort = () => void shutdown();

  if (!handler.onEdge && (options.handleSignals ?? true)) {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      try {
        Deno.addSignalListener(signal, onSignal);
        signals.push(signal);
      } catch {
        // SIGTERM cannot be listened for on Windows; Ctrl-C still arrives as SIGINT.
      }
    }
  }
  if (options.signal?.aborted) void shutdown();
  else options.signal?.addEventListener("abort", onAbort, { once: true });

  if (options.startImmediately ?? startImmediatelyFromEnv(options.env)) {
    void handler.start().then((status) => {
      if (status.status !== "running") logger.warn("worker not started", { ...status });
    });
  }

  return {
    handler,
    addr: server.addr,
    finished: server.finished,
    shutdown,
    [Symbol.asyncDispose]: shutdown,
  };
}

function startImmediatelyFromEnv(env: Readonly<Record<string, string | undefined>> | undefined) {
  let value: string | undefined;
  try {
    value = env === undefined
      ? Deno.env.get("SLUICE_WORKER_START_IMMEDIATELY")
      : env.SLUICE_WORKER_START_IMMEDIATELY;
  } catch {
    // No --allow-env: start on the first request.
  }
  return value === "true" || value === "1";
}

/** `PORT` from the environment (the `env` option, else the process's), when set. */
function portFromEnv(
  functionName: string,
  env: Readonly<Record<string, string | undefined>>,
): number | undefined {
  const value = env.PORT;
  if (value === undefined || value === "") return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(
      `Cannot serve worker function "${functionName}": PORT must be a port number (0-65535), got ${
        JSON.stringify(value)
      }`,
    );
  }
  return port;
}
