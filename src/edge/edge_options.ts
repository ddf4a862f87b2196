/**
 * The options and status types of a worker function: what `createWorkerHandler()` and
 * `serveWorker()` take and report. A leaf module.
 *
 * @module
 */

import type { DeployableFlow } from "../dsl/types.ts";
import type { BaseWorkerOptions, WorkerOptions, WorkerStatus } from "../worker/worker_options.ts";

/**
 * The part of Supabase's `EdgeRuntime` global the adapter uses: `waitUntil` keeps the isolate
 * alive until the promise settles, after the response has been sent.
 *
 * @example Usage
 * ```ts
 * import type { EdgeRuntimeLike } from "@sluice/sluice/edge";
 *
 * const pending: Promise<unknown>[] = [];
 * const standIn: EdgeRuntimeLike = { waitUntil: (promise) => void pending.push(promise) };
 * ```
 */
export interface EdgeRuntimeLike {
  /** Keeps the isolate alive until `promise` settles. */
  waitUntil(promise: Promise<unknown>): void;
}

/**
 * Where a worker function's isolate is:
 *
 * - `idle`: no worker yet (only seen through `handler.status`: a request starts one);
 * - `starting`: a request is starting the worker (checking the function's row, compiling);
 * - `running`: the worker polls its queue;
 * - `draining`: the isolate is ending (or the worker stops): no polling, in-flight tasks finish;
 * - `paused`: the function is restart-paused (a worker met unsupported work); nothing starts
 *   until an operator runs `sluice.clear_restart_pause`;
 * - `disabled`: the function's `enabled` flag is off; nothing starts;
 * - `stopped`: this isolate's worker has stopped and the isolate starts no other;
 * - `failed`: the worker could not start (see `error`); the next request tries again.
 *
 * @example Usage
 * ```ts
 * import type { WorkerFunctionState } from "@sluice/sluice/edge";
 *
 * const state: WorkerFunctionState = "paused";
 * ```
 */
export type WorkerFunctionState =
  | "idle"
  | "starting"
  | "running"
  | "draining"
  | "paused"
  | "disabled"
  | "stopped"
  | "failed";

/**
 * The JSON body of every authorized response, and the value of `handler.status`.
 *
 * @example Usage
 * ```ts
 * import type { WorkerFunctionStatus } from "@sluice/sluice/edge";
 *
 * const status: WorkerFunctionStatus = {
 *   status: "running",
 *   functionName: "orders",
 *   isolateId: "5f0c7a52-7a0e-4a8e-9a7b-2f3c1d2e4b6a",
 *   workerId: "0b8e2c1a-9f3d-4c6e-8a1b-7d5e3f2a1c9b",
 *   flowSlug: "orders",
 *   queue: "orders",
 * };
 * ```
 */
export interface WorkerFunctionStatus {
  /** Where the isolate is. */
  readonly status: WorkerFunctionState;
  /** The worker function (its `sluice.worker_functions` row). */
  readonly functionName: string;
  /** A random id of this isolate (handler instance), to tell isolates apart in logs. */
  readonly isolateId: string;
  /** The worker's id while this isolate has one. */
  readonly workerId?: string;
  /** The concrete flow slug of the worker. */
  readonly flowSlug?: string;
  /** The queue the worker polls. */
  readonly queue?: string;
  /**
   * `paused`: the stored pause reason. `draining` and `stopped`: why the isolate ends
   * (`beforeunload`, `wall_clock_budget`, `requested`, `closed`).
   */
  readonly reason?: string;
  /** `paused`: when the pause was set (ISO 8601). */
  readonly pausedAt?: string;
  /** `failed`: why the worker could not start. */
  readonly error?: string;
  /**
   * A co-hosting function (`serveWorkers`): each of its workers while this isolate has them, in
   * the order they started (`workerId`, `flowSlug` and `queue` above are the first one's).
   */
  readonly workers?: readonly HostedWorkerStatus[];
}

/**
 * One worker of a co-hosting function, in its {@linkcode WorkerFunctionStatus}.
 *
 * @example Usage
 * ```ts
 * import type { HostedWorkerStatus } from "@sluice/sluice/edge";
 *
 * const worker: HostedWorkerStatus = {
 *   workerId: "0b8e2c1a-9f3d-4c6e-8a1b-7d5e3f2a1c9b",
 *   flowSlug: "invoice_send",
 *   stepSlug: "email_invoice",
 *   queue: "invoice_send__email_invoice",
 *   status: "running",
 * };
 * ```
 */
export interface HostedWorkerStatus {
  /** The worker's id, as in `sluice.workers`. */
  readonly workerId: string;
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The step it serves. */
  readonly stepSlug: string | null;
  /** The queue it polls. */
  readonly queue: string;
  /** The worker's own status. */
  readonly status: WorkerStatus;
}

/**
 * The Edge lifecycle options of `createWorkerHandler()` and `serveWorker()`, on
 * top of the worker's own. Configuration not given here is read from `env`.
 *
 * @example Usage
 * ```ts
 * import type { EdgeHostOptions } from "@sluice/sluice/edge";
 *
 * const options: EdgeHostOptions = { wallClockBudgetMs: 390_000 }; // a paid plan: 400 s
 * ```
 */
export interface EdgeHostOptions {
  /**
   * A connection URL. The adapter opens one pool (`poolSize` connections) shared by the worker
   * and the adapter's own queries, and closes it when the isolate ends.
   *
   * @default {env SLUICE_DATABASE_URL, then SUPABASE_DB_URL, then DATABASE_URL}
   */
  readonly connectionString?: string;
  /**
   * The bearer secret every request must carry (`Authorization: Bearer <secret>`), also sent by
   * the successor request. Without one, every request is refused with a 500 naming the variable
   * to set.
   *
   * @default {env SLUICE_WORKER_SECRET, then env SUPABASE_SERVICE_ROLE_KEY}
   */
  readonly secret?: string;
  /**
   * The function's own URL, called to start a successor.
   *
   * @default {env SUPABASE_URL + "/functions/v1/" + functionName}
   */
  readonly selfUrl?: string | URL;
  /**
   * On Edge: how long after the isolate started its worker stops by itself and hands over to a
   * successor, in case the platform's `beforeunload` comes too late. With `drainTimeoutMs` and
   * the successor request it must fit in the platform's wall-clock limit (Supabase: 150 s on the
   * free plan, 400 s on paid plans). `Infinity` relies on `beforeunload` alone.
   *
   * @default {140000}
   */
  readonly wallClockBudgetMs?: number;
  /**
   * When the isolate ends: the deadline of the drain. In-flight tasks get 3 s less (then their
   * signals abort and their attempts fail); the rest is kept for reporting results. The successor
   * is requested as soon as the worker has stopped polling, without waiting for the drain.
   *
   * @default {8000}
   */
  readonly drainTimeoutMs?: number;
  /**
   * Request a successor when the isolate ends (`beforeunload`, the wall-clock budget, `end()`).
   *
   * @default {true}
   */
  readonly respawn?: boolean;
  /**
   * The platform runtime whose `waitUntil` keeps the isolate alive for the worker. `null` runs as
   * a plain Deno process (no wall-clock budget, no `beforeunload` handling).
   *
   * @default {globalThis.EdgeRuntime, or null when absent}
   */
  readonly edgeRuntime?: EdgeRuntimeLike | null;
  /**
   * Where the platform announces the end of the isolate with a `beforeunload` event.
   *
   * @default {globalThis on Edge, none otherwise}
   */
  readonly lifecycleEvents?: EventTarget;
  /**
   * Environment read for the configuration above and passed to handlers as `context.env`.
   *
   * @default {Deno.env.toObject()}
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * How the function's OpenTelemetry reaches its backend (docs/observability.md): a hosted Edge
   * Function has no long-lived exporter, so the spans and metrics the worker writes to the
   * OpenTelemetry API are exported by `flush` (e.g. `provider.forceFlush()` of an SDK with an
   * OTLP/HTTP exporter), which the adapter calls under `EdgeRuntime.waitUntil` after each
   * request it answers, and before the worker's life ends (its stop, the isolate's end). A flush
   * that fails is logged; it never fails the request or the worker.
   *
   * @default {none: nothing is flushed}
   */
  readonly telemetry?: EdgeTelemetry;
}

/**
 * The {@linkcode EdgeHostOptions.telemetry} hook.
 *
 * @example Usage
 * ```ts ignore
 * import type { EdgeTelemetry } from "@sluice/sluice/edge";
 * import { BasicTracerProvider, BatchSpanProcessor } from "npm:@opentelemetry/sdk-trace-base@2.5.1";
 * import { OTLPTraceExporter } from "npm:@opentelemetry/exporter-trace-otlp-http@0.212.0";
 *
 * const provider = new BasicTracerProvider({
 *   spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
 * });
 * const telemetry: EdgeTelemetry = { flush: () => provider.forceFlush() };
 * ```
 */
export interface EdgeTelemetry {
  /** Exports everything recorded so far; resolves once it is sent. */
  flush(): Promise<void>;
}

/**
 * Options of `createWorkerHandler()` for a worker function of flow `F`: the worker's own options
 * for that flow (`WorkerOptions<F>`: `stepSlug` required exactly for a step-queued flow, typed as
 * its step-slug union; `activate` only for a deployed flow) plus the Edge lifecycle.
 *
 * @typeParam F The flow the function serves; the default (any deployable flow) accepts every
 * kind's options.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import type { WorkerFunctionOptions } from "@sluice/sluice/edge";
 *
 * const orders = new Flow({ slug: "orders" }).step({ slug: "charge" }, () => 1);
 * const plain: WorkerFunctionOptions<typeof orders> = {
 *   functionName: "orders-worker",
 *   maxConcurrent: 5,
 *   wallClockBudgetMs: 390_000, // a paid plan: 400 s
 * };
 * const queued = withStepQueues(orders);
 * const step: WorkerFunctionOptions<typeof queued> = { stepSlug: "charge", maxConcurrent: 4 };
 * ```
 */
export type WorkerFunctionOptions<F extends DeployableFlow = DeployableFlow> =
  & WorkerOptions<F>
  & EdgeHostOptions;

/**
 * The request handler of one worker function in one isolate. At most one worker runs at a time;
 * the first authorized request (or `start()`) starts it.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const flow = new Flow({ slug: "hello" }).step({ slug: "greet" }, () => "hi");
 * await using handler = createWorkerHandler(flow);
 * await using server = Deno.serve({ port: 0 }, handler.fetch);
 * ```
 */
export interface WorkerFunctionHandler extends AsyncDisposable {
  /** The worker function name. */
  readonly functionName: string;
  /** A random id of this isolate (handler instance). */
  readonly isolateId: string;
  /** Whether it runs under an Edge runtime (`waitUntil`, wall-clock budget, `beforeunload`). */
  readonly onEdge: boolean;
  /** Where the isolate is now. */
  readonly status: WorkerFunctionStatus;
  /**
   * Answers one request: 401 without the secret; otherwise starts the worker when none runs and
   * answers the status as JSON (200 `running`, 202 `starting`, 503 `draining`, `stopped`,
   * `paused` or `disabled`, 500 `failed` or no secret configured).
   */
  readonly fetch: (request: Request) => Promise<Response>;
  /**
   * Starts the worker unless one runs or starts, exactly as an authorized request does.
   *
   * @returns The status a request would have answered.
   */
  start(): Promise<WorkerFunctionStatus>;
  /**
   * Ends the isolate as the platform's `beforeunload` does: stop polling, request a successor
   * (unless disabled, paused or already requested by another isolate) while in-flight tasks drain
   * within `drainTimeoutMs`, close the pool. Later requests answer `draining`, then `stopped`.
   */
  end(): Promise<void>;
  /** Stops the worker gracefully without a successor and closes the pool. */
  close(): Promise<void>;
}

/**
 * Options of `serveWorkers()`: the co-hosting function's name (given in `withStepQueues(flow,
 * { functions })`), the options every hosted worker shares (each keeps its own
 * `maxConcurrent` slots), the Edge options, and where to listen.
 *
 * @example Usage
 * ```ts
 * import type { WorkerGroupFunctionOptions } from "@sluice/sluice/edge";
 *
 * const options: WorkerGroupFunctionOptions = {
 *   functionName: "office-interactive",
 *   maxConcurrent: 4,
 * };
 * ```
 */
export type WorkerGroupFunctionOptions =
  & BaseWorkerOptions
  & EdgeHostOptions
  & {
    /** The co-hosting function: its Edge Function, `sluice.worker_functions` row and URL. */
    readonly functionName: string;
  };
