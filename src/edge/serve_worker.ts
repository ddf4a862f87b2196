/**
 * `serveWorker()`: the whole body of a worker function's Edge Function entrypoint.
 *
 * @module
 */

import type { DeployableFlow } from "../dsl/types.ts";
import { jsonLineSink, Logger } from "../worker/logger.ts";
import { processEnv } from "../worker/worker_config.ts";
import type { FlowOptionsArgument } from "../worker/worker_options.ts";
import { WorkerFunctionHost } from "./_host.ts";
import { resolveGroupHostConfig } from "./_host_config.ts";
import type {
  WorkerFunctionHandler,
  WorkerFunctionOptions,
  WorkerGroupFunctionOptions,
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
 * Options of {@linkcode serveWorker} for a worker function of flow `F`: the handler's options for
 * that flow (`WorkerFunctionOptions<F>`: `stepSlug` required exactly for a step-queued flow,
 * `activate` only for a deployed one) plus where to listen.
 *
 * @typeParam F The flow the function serves; the default (any deployable flow) accepts every
 * kind's options.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import type { ServeWorkerOptions } from "@sluice/sluice/edge";
 *
 * const digest = withStepQueues(
 *   new Flow({ slug: "thread_digest" })
 *     .step({ slug: "classify" }, () => "question")
 *     .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => deps.classify),
 * );
 * const options: ServeWorkerOptions<typeof digest> = {
 *   stepSlug: "classify",
 *   port: 8787,
 *   startImmediately: true,
 * };
 * ```
 */
export type ServeWorkerOptions<F extends DeployableFlow = DeployableFlow> =
  & WorkerFunctionOptions<F>
  & ServeListenOptions;

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
 * Serves the worker function of `flow` over HTTP: the whole body of an Edge Function entrypoint,
 * as `deno task gen:functions` writes it.
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
 * The options are keyed on the flow ({@linkcode ServeWorkerOptions}), as for
 * `createWorkerHandler`: a step-queued flow has one function per step, named by the required
 * `stepSlug` (typed as the flow's step-slug union; `functionName` defaults to
 * `workerFunctionName(flowSlug, stepSlug)`, the generated function's name); a deployed flow's
 * worker may activate the alias at startup (`activate: "on-startup"`, see `startWorker`).
 *
 * @typeParam F The flow: plain, step-queued or deployed.
 * @param flow The flow whose steps the worker runs.
 * @param options Listening, worker, connection, authorization and lifecycle options; required
 * for a step-queued flow (its `stepSlug`).
 * @returns The served function.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of a step-queued flow, or given
 * for a plain flow; the error lists the valid slugs.
 * @throws {TypeError} When options are inconsistent, or `activate` is given for a concrete flow or
 * is neither `"on-startup"` nor `"manual"`.
 * @throws {RangeError} When a duration option, `poolSize` or another numeric option is out of
 * range.
 *
 * @example A plain flow
 * ```ts ignore
 * // supabase/functions/orders-worker/index.ts
 * import { serveWorker } from "@sluice/sluice/edge";
 * import { orders } from "../_flows/orders.ts";
 *
 * serveWorker(orders, { functionName: "orders-worker" });
 * ```
 *
 * @example One step of a step-queued flow
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
 *
 * @example A deployed flow that activates its alias
 * ```ts ignore
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { serveWorker } from "@sluice/sluice/edge";
 *
 * const v2 = new Flow({ slug: "greet_v2" }).step({ slug: "compose" }, () => "hi");
 * serveWorker(defineDeployedFlow(v2, { alias: "greet" }), { activate: "on-startup" });
 * ```
 */
export function serveWorker<F extends DeployableFlow>(
  flow: F,
  ...[options]: FlowOptionsArgument<F, ServeWorkerOptions<F>>
): WorkerServer {
  const checked = (options ?? {}) as ServeWorkerOptions;
  return serve(new WorkerFunctionHost(flow, checked), checked);
}

/**
 * Options of {@linkcode serveWorkers}: the co-hosting function's name and the options its
 * workers share ({@linkcode WorkerGroupFunctionOptions}) plus where to listen.
 *
 * @example Usage
 * ```ts
 * import type { ServeWorkersOptions } from "@sluice/sluice/edge";
 *
 * const options: ServeWorkersOptions = { functionName: "office-interactive", port: 8787 };
 * ```
 */
export type ServeWorkersOptions = WorkerGroupFunctionOptions & ServeListenOptions;

/**
 * Serves a co-hosting worker function over HTTP: one worker per step of `flows` that
 * `withStepQueues(flow, { functions })` maps to `options.functionName`, all in this one process
 * on one pool and one LISTEN session. Every step keeps its own queue, worker (its own
 * `sluice.workers` row and coverage), poll loop and `maxConcurrent` slots, so a flooded step
 * never takes a light one's slots. The lifecycle is `serveWorker`'s: the first authorized
 * request starts the workers together (after consulting the function's row), the end of the
 * isolate stops them together and requests one successor. A worker that stops by itself (its
 * flow version deprecated by a rollout) leaves the others running; one that meets unsupported
 * work pauses the function.
 *
 * `sluice functions generate` writes this call as the entrypoint of every function named in a
 * `functions` map (docs/step_queues.md#co-hosting-steps-in-one-function).
 *
 * @param flows The step-queued (or deployed step-queued) flows with steps hosted here.
 * @param options `functionName` (required) and the options every hosted worker shares.
 * @returns The served function.
 * @throws {TypeError} When `functionName` is missing, a flow is plain or hosts no step here
 * (the message lists the flow's step functions), or options are inconsistent.
 * @throws {RangeError} When a numeric option is out of range.
 *
 * @example A co-hosting function
 * ```ts ignore
 * // supabase/functions/office-interactive/index.ts
 * import { serveWorkers } from "@sluice/sluice/edge";
 * import * as flows from "../_shared/flows.ts";
 *
 * serveWorkers([flows.invoiceSend, flows.refundReview], { functionName: "office-interactive" });
 * ```
 */
export function serveWorkers(
  flows: readonly DeployableFlow[],
  options: ServeWorkersOptions,
): WorkerServer {
  return serve(new WorkerFunctionHost(resolveGroupHostConfig(flows, options)), options);
}

/** Serves a host: the body of {@linkcode serveWorker} and {@linkcode serveWorkers}. */
function serve(
  handler: WorkerFunctionHandler & { readonly onEdge: boolean },
  options: ServeListenOptions & {
    readonly env?: Readonly<Record<string, string | undefined>>;
    readonly logLevel?: WorkerFunctionOptions["logLevel"];
    readonly logger?: WorkerFunctionOptions["logger"];
  },
): WorkerServer {
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
