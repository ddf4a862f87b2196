/**
 * The options and status types of a worker: what `startWorker()` takes and returns. A leaf
 * module, shared by the worker and the Edge adapter.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import type { CompileEnvironment } from "../deploy/compile_types.ts";
import type { DeployedFlow } from "../dsl/deployed_flow.ts";
import type { Flow } from "../dsl/flow.ts";
import type { StepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import type { LogLevel, LogSink } from "./logger.ts";

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
 * The options every worker takes, whatever its flow. Give either `sql` or `connectionString`.
 * {@linkcode WorkerOptions} adds the options that depend on the flow
 * ({@linkcode WorkerTargetOptions}: `functionName`, `stepSlug`, `activate`).
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
   * (the task timeout + 2 s), until the worker's first claim: from then on it reads with the claim
   * visibility of the tasks it claimed last, which the claim keeps instead of writing the message
   * again. Only matters if the worker dies between read and claim, which happen in one statement.
   *
   * @default {30}
   */
  readonly visibilityTimeout?: number;
  /**
   * With LISTEN: how often the LISTEN session looks at the queues of its waiting workers, in one
   * statement for all of them, and wakes those whose queue has a visible message (a safety net, and
   * how soon delayed messages are seen; notifications normally wake the worker within
   * milliseconds).
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
   * Interval between heartbeats. A heartbeat also tells the worker it was deprecated, and which of
   * its running attempts are no longer live (a cancelled run): their handlers' signals abort then,
   * so this is the longest a handler runs on after its run was cancelled.
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
   * How long startup keeps trying while the database is unreachable (starting up, restarting,
   * failing over): the first statements are retried with backoff (100 ms doubling to 1 s) for up
   * to this long, then `startWorker()` rejects with the last connection error. `0` fails at once.
   *
   * @default {60000}
   */
  readonly startupTimeoutMs?: number;
  /**
   * The largest handler output stored, in bytes of its JSON text (UTF-8). A larger output fails
   * its attempt with a `JsonSizeError` message (retried like any failure) and is never written.
   *
   * @default {the flow's `maxOutputBytes`, else 16777216 (16 MiB)}
   */
  readonly maxOutputBytes?: number;
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
   * Environment passed to handlers as `context.env`, and where a worker given neither `sql` nor
   * `connectionString` finds its URL: `SLUICE_DATABASE_URL`, `SUPABASE_DB_URL`, then
   * `DATABASE_URL`.
   *
   * @default {Deno.env.toObject()}
   */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The options of a worker that depend on its flow `F`, keyed on the kind of flow:
 *
 * - `stepSlug`: required for a step-queued flow (`withStepQueues()`, deployed or not), typed as
 *   the union of its step slugs, so a typo is reported as
 *   `Type '"chrage"' is not assignable to type '"charge" | "ship"'`; absent for a plain flow,
 *   whose worker runs every step.
 * - `activate`: only for a deployed flow (`defineDeployedFlow()`), see
 *   {@linkcode AliasActivationOptions}.
 * - `functionName`: any flow.
 *
 * With the default `F` (any deployable flow) it is the union of every kind's options.
 *
 * @typeParam F The flow the worker serves.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import type { WorkerTargetOptions } from "@sluice/sluice/worker";
 *
 * const digest = withStepQueues(
 *   new Flow({ slug: "digest" }).step({ slug: "classify" }, () => "question"),
 * );
 * const options: WorkerTargetOptions<typeof digest> = { stepSlug: "classify" };
 * ```
 */
export type WorkerTargetOptions<F extends DeployableFlow = DeployableFlow> =
  & {
    /**
     * The worker function (deployable unit) this worker belongs to: its row carries the
     * `enabled` and restart-pause flags.
     *
     * @default {`workerFunctionName(flowSlug, stepSlug)` (a `null` step for a plain flow, e.g.
     * `greet-user`): the name `deno task gen:functions` gives its Edge Function}
     */
    readonly functionName?: string;
  }
  // Keyed on the concrete flow: a deployed flow's worker is the wrapped flow's.
  & ((F extends DeployedFlow<infer Wrapped> ? Wrapped : F) extends infer C
    ? C extends StepQueuedFlow<Flow<unknown, infer Steps>> ? {
        /**
         * The one step this worker serves: it polls that step's private queue and claims only
         * that step's tasks.
         */
        // Spelled out rather than `StepSlug<C>`: the checker then names the slugs themselves in
        // its errors ('"charge" | "ship"'), not the alias.
        readonly stepSlug: keyof Steps & string;
      }
    : {
      /**
       * Only for step-queued flows (`withStepQueues`): a plain flow's worker polls the flow's one
       * queue and runs every step.
       */
      readonly stepSlug?: undefined;
    }
    : never)
  & (F extends DeployedFlow ? AliasActivationOptions : {
    /**
     * Only for a deployed flow's worker (`defineDeployedFlow(flow, { alias })`): a concrete flow
     * has no alias to activate.
     */
    readonly activate?: undefined;
  });

/**
 * Options of {@linkcode startWorker} for a worker of flow `F`: connection, concurrency, timing and
 * logging ({@linkcode BaseWorkerOptions}) plus the options keyed on the flow
 * ({@linkcode WorkerTargetOptions}: `stepSlug` required exactly for a step-queued flow, `activate`
 * only for a deployed one). Give either `sql` or `connectionString`.
 *
 * @typeParam F The flow the worker serves; the default (any deployable flow) accepts every kind's
 * options, for code that holds a flow of unknown kind (the options are then checked at run time).
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import type { WorkerOptions } from "@sluice/sluice/worker";
 *
 * const flow = new Flow({ slug: "digest" }).step({ slug: "classify" }, () => "question");
 * const plain: WorkerOptions<typeof flow> = {
 *   connectionString: "postgres://postgres:postgres@127.0.0.1:54322/postgres",
 *   maxConcurrent: 20,
 * };
 * const queued = withStepQueues(flow);
 * const step: WorkerOptions<typeof queued> = { ...plain, stepSlug: "classify" };
 * ```
 */
export type WorkerOptions<F extends DeployableFlow = DeployableFlow> =
  & BaseWorkerOptions
  & WorkerTargetOptions<F>;

/**
 * The options argument of an entry point whose options may be omitted for flow `F`
 * (`createWorkerHandler`, `serveWorker`, `resolveWorkerTarget`): required for a step-queued flow,
 * whose `stepSlug` must be given, optional for any other.
 *
 * @typeParam F The flow.
 * @typeParam O The entry point's options for `F`.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import type { FlowOptionsArgument, WorkerTargetOptions } from "@sluice/sluice/worker";
 *
 * const flow = new Flow({ slug: "digest" }).step({ slug: "classify" }, () => "question");
 * const queued = withStepQueues(flow);
 * const none: FlowOptionsArgument<typeof flow, WorkerTargetOptions<typeof flow>> = [];
 * const one: FlowOptionsArgument<typeof queued, WorkerTargetOptions<typeof queued>> = [
 *   { stepSlug: "classify" },
 * ];
 * ```
 */
export type FlowOptionsArgument<F extends DeployableFlow, O> =
  (F extends DeployedFlow<infer Wrapped> ? Wrapped : F) extends StepQueuedFlow ? [options: O]
    : [options?: O];

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
 * When a deployed flow's worker points the flow's alias at its concrete flow:
 *
 * - `"manual"`: never; an operator activates (`sluice aliases activate`, or `activateAlias()`).
 * - `"on-startup"`: once it has compiled the flow, registered itself and started polling, by
 *   compare-and-swap on the generation it read. It succeeds only when every step of the flow has
 *   a live worker, so with one worker per step the last one to start activates.
 *
 * @example Usage
 * ```ts
 * import type { AliasActivationMode } from "@sluice/sluice/worker";
 *
 * const mode: AliasActivationMode = "on-startup";
 * ```
 */
export type AliasActivationMode = "on-startup" | "manual";

/**
 * The option only a deployed flow's worker takes (`defineDeployedFlow()`).
 *
 * @example Usage
 * ```ts
 * import type { AliasActivationOptions } from "@sluice/sluice/worker";
 *
 * const options: AliasActivationOptions = { activate: "on-startup" };
 * ```
 */
export interface AliasActivationOptions {
  /**
   * Whether the worker activates the flow's alias at startup (see {@linkcode AliasActivationMode}).
   * A lost race or a step without a live worker is logged and not retried; the worker keeps
   * serving either way.
   *
   * @default {"manual"; in a worker function (`serveWorker`, `createWorkerHandler`): env
   * SLUICE_ACTIVATE_ALIAS when set, else "manual"}
   */
  readonly activate?: AliasActivationMode;
}

/**
 * What a deployed flow's worker did with the alias at startup:
 *
 * - `manual`: nothing (`activate: "manual"`).
 * - `already_active`: the alias already pointed at this concrete flow.
 * - `activated`: it re-pointed (or created) the alias.
 * - `conflict`: another activation changed the alias between the read and the swap; not retried.
 * - `workers_missing`: a step of the flow had no live worker yet (its worker will activate when
 *   it starts, if it is configured to).
 * - `superseded`: the alias was moved away from this flow before (a newer version activated, or
 *   an operator rolled back past it); a startup activation never moves the alias back.
 * - `failed`: the activation failed otherwise (logged at error level); the worker keeps serving.
 *
 * @example Usage
 * ```ts
 * import type { AliasActivationOutcome } from "@sluice/sluice/worker";
 *
 * const outcome: AliasActivationOutcome = "workers_missing";
 * ```
 */
export type AliasActivationOutcome =
  | "manual"
  | "already_active"
  | "activated"
  | "conflict"
  | "workers_missing"
  | "superseded"
  | "failed";

/**
 * The alias activation a deployed flow's worker attempted at startup.
 *
 * @example Usage
 * ```ts
 * import type { AliasActivationResult } from "@sluice/sluice/worker";
 *
 * const result: AliasActivationResult = {
 *   alias: "orders",
 *   outcome: "activated",
 *   generation: 2,
 * };
 * ```
 */
export interface AliasActivationResult {
  /** The alias. */
  readonly alias: string;
  /** What happened. */
  readonly outcome: AliasActivationOutcome;
  /**
   * The alias's generation as the worker last saw it: the new one when `activated`, the current
   * one when `already_active`, `workers_missing`, `superseded` or `conflict` (0: no such alias), `null` when
   * `manual` or `failed`.
   */
  readonly generation: number | null;
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
  /** A deployed flow's worker: what it did with the alias at startup; `null` otherwise. */
  readonly aliasActivation: AliasActivationResult | null;
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
