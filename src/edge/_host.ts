/**
 * The worker function host: one per isolate. It authorizes requests, starts at most one worker
 * at a time after consulting the function's row, keeps the isolate alive for it through
 * `EdgeRuntime.waitUntil`, and runs the end of the isolate: stop polling, claim the respawn in
 * PostgreSQL and request a successor while in-flight tasks drain by a deadline.
 *
 * @module
 */

import type { Sql } from "postgres";
import { connect } from "../db/connect.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { jsonLineSink, Logger } from "../worker/logger.ts";
import {
  startWorker,
  type StepWorkerOptions,
  type WorkerHandle,
  type WorkerOptions,
} from "../worker/start_worker.ts";
import { resolveWorkerTarget, type WorkerTarget } from "../worker/worker_target.ts";
import { BearerAuth } from "./_auth.ts";
import { describeError } from "./_describe_error.ts";
import { claimRespawn, readFunctionState } from "../db/edge_queries.ts";
import { requestSuccessor } from "./_respawn.ts";
import type {
  EdgeRuntimeLike,
  StepWorkerFunctionOptions,
  WorkerFunctionHandler,
  WorkerFunctionOptions,
  WorkerFunctionState,
  WorkerFunctionStatus,
} from "./create_worker_handler.ts";

/** Either mode's worker options; the public overloads tie each to its kind of flow. */
type AnyWorkerOptions = WorkerOptions | StepWorkerOptions;
type AnyWorkerFunctionOptions = WorkerFunctionOptions | StepWorkerFunctionOptions;

// The overloads of the public functions checked flow and options together; the host holds either
// pair, so it calls their implementations' signatures.
const resolveTarget = resolveWorkerTarget as (
  flow: DeployableFlow,
  options: AnyWorkerOptions,
) => WorkerTarget;
const launchWorker = startWorker as (
  flow: DeployableFlow,
  options: AnyWorkerOptions,
) => Promise<WorkerHandle>;

/** Why an isolate ends. */
type EndReason = "beforeunload" | "wall_clock_budget" | "requested" | "closed";

/** What starting a worker came to. */
interface Launch {
  readonly worker: WorkerHandle | null;
  readonly status: WorkerFunctionStatus;
}

const DEFAULT_WALL_CLOCK_BUDGET_MS = 140_000;
const DEFAULT_DRAIN_TIMEOUT_MS = 8_000;
/** Part of the drain timeout kept for reporting results after the task grace period. */
const RESULT_FLUSH_RESERVE_MS = 3_000;
/** Longest wait for the successor's answer (a cold start that compiles the flow first). */
const SUCCESSOR_TIMEOUT_MS = 10_000;

const HTTP_STATUS: Readonly<Record<WorkerFunctionState, number>> = {
  idle: 200,
  starting: 202,
  running: 200,
  draining: 503,
  paused: 503,
  disabled: 503,
  stopped: 503,
  failed: 500,
};

interface GlobalWithEdgeRuntime {
  EdgeRuntime?: EdgeRuntimeLike;
}

/** The implementation behind `createWorkerHandler()`. */
export class WorkerFunctionHost implements WorkerFunctionHandler {
  readonly functionName: string;
  readonly isolateId: string = crypto.randomUUID();
  readonly onEdge: boolean;

  #flow: DeployableFlow;
  #workerOptions: AnyWorkerOptions;
  #logger: Logger;
  #secret: string | null;
  #auth: BearerAuth | null;
  #sql: Sql | null;
  #ownsPool: boolean;
  #configError: string | null;
  #selfUrl: URL | null;
  #edgeRuntime: EdgeRuntimeLike | null;
  #lifecycle: EventTarget | null;
  #wallClockBudgetMs: number;
  #drainTimeoutMs: number;
  /** When the isolate ends: how long in-flight tasks may run (the drain minus the flush reserve). */
  #drainGraceMs: number;
  #respawn: boolean;
  #createdAt = performance.now();

  /** The current worker, from its start until it has stopped. */
  #worker: WorkerHandle | null = null;
  /** The start in progress: resolves with the worker, or `null` when none started. */
  #starting: Promise<WorkerHandle | null> | null = null;
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

  constructor(flow: DeployableFlow, options: AnyWorkerFunctionOptions) {
    if (typeof options !== "object" || options === null) {
      throw new TypeError("Cannot create worker handler: options must be an object");
    }
    this.#flow = flow;
    const env = options.env ?? processEnv();
    const setting = (name: string) => {
      const value = env[name];
      return value === undefined || value === "" ? null : value;
    };
    // The worker's own checks (stepSlug, functionName), at creation rather than at the first
    // request; the function name is needed from here on.
    const { functionName } = resolveTarget(flow, options);
    this.functionName = functionName;
    const fail = (message: string): never => {
      throw new TypeError(`Cannot create worker handler for "${functionName}": ${message}`);
    };

    this.#edgeRuntime = options.edgeRuntime !== undefined
      ? options.edgeRuntime
      : (globalThis as GlobalWithEdgeRuntime).EdgeRuntime ?? null;
    this.onEdge = this.#edgeRuntime !== null;
    this.#lifecycle = options.lifecycleEvents ?? (this.onEdge ? globalThis : null);
    this.#wallClockBudgetMs = duration(
      functionName,
      "wallClockBudgetMs",
      options,
      DEFAULT_WALL_CLOCK_BUDGET_MS,
      true,
    );
    this.#drainTimeoutMs = duration(
      functionName,
      "drainTimeoutMs",
      options,
      DEFAULT_DRAIN_TIMEOUT_MS,
      false,
    );
    this.#drainGraceMs = Math.max(0, this.#drainTimeoutMs - RESULT_FLUSH_RESERVE_MS);
    this.#respawn = options.respawn ?? true;

    this.#logger = new Logger(options.logLevel ?? "info", options.logger ?? jsonLineSink, {
      function_name: functionName,
      isolate_id: this.isolateId,
    });

    this.#secret = options.secret ?? setting("SLUICE_WORKER_SECRET") ??
      setting("SUPABASE_SERVICE_ROLE_KEY");
    if (this.#secret === "") this.#secret = null;
    this.#auth = this.#secret === null ? null : new BearerAuth(this.#secret);
    if (this.#auth === null) this.#logger.error(noSecretMessage(functionName));

    this.#selfUrl = resolveSelfUrl(functionName, options.selfUrl, setting("SUPABASE_URL"), fail);

    if (options.sql !== undefined && options.connectionString !== undefined) {
      fail("give either sql or connectionString, not both");
    }
    // The pool opens last: nothing after it may throw, or it would be left behind.
    const url = options.sql === undefined
      ? options.connectionString ?? setting("SLUICE_DATABASE_URL") ?? setting("SUPABASE_DB_URL")
      : null;
    this.#ownsPool = options.sql === undefined && url !== null;
    this.#sql = options.sql ??
      (url === null ? null : connect(url, {
        max: options.poolSize ?? 4,
        applicationName: `sluice-edge:${functionName}`,
      }));
    this.#configError = this.#sql === null
      ? `Cannot start worker function "${functionName}": no database connection; set ` +
        "SLUICE_DATABASE_URL (or SUPABASE_DB_URL), or pass connectionString or sql"
      : null;

    this.#workerOptions = {
      ...workerOnly(options),
      sql: this.#sql ?? undefined,
      functionName,
      env,
    };

    this.#lifecycle?.addEventListener("beforeunload", this.#onBeforeUnload);
  }

  readonly fetch = async (request: Request): Promise<Response> => {
    // The body carries nothing the worker needs; release it at once.
    await request.body?.cancel().catch(() => {});
    if (this.#auth === null) {
      return json(500, { error: noSecretMessage(this.functionName) });
    }
    if (!(await this.#auth.verify(request.headers.get("authorization")))) {
      return json(401, { error: "Unauthorized: send Authorization: Bearer <secret>" }, {
        "www-authenticate": 'Bearer realm="sluice"',
      });
    }
    const status = await this.start();
    return json(HTTP_STATUS[status.status], status);
  };

  get status(): WorkerFunctionStatus {
    const worker = this.#worker;
    if (this.#ending !== null) {
      return this.#snapshot(this.#endComplete ? "stopped" : "draining", {
        worker,
        reason: this.#ending,
      });
    }
    if (worker !== null) {
      const state: WorkerFunctionState = worker.status === "running"
        ? "running"
        : worker.status === "fatal"
        ? "paused"
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
      return Promise.resolve(this.#snapshot("failed", { error: this.#configError ?? undefined }));
    }
    const launch = this.#launch(this.#sql);
    this.#starting = launch.then((outcome) => outcome.worker);
    const life = launch.then(async ({ worker }) => {
      this.#starting = null;
      if (worker !== null) await this.#supervise(worker);
    }).catch((error) => {
      this.#logger.error("worker supervision failed", { error: describeError(error) });
    });
    this.#life = life;
    this.#edgeRuntime?.waitUntil(life);
    return launch.then((outcome) => outcome.status);
  }

  end(): Promise<void> {
    return this.#end("requested", this.#respawn);
  }

  close(): Promise<void> {
    return this.#end("closed", false);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #onBeforeUnload = (): void => {
    void this.#end("beforeunload", this.#respawn);
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
      const worker = await launchWorker(this.#flow, this.#workerOptions);
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

  /** Waits for the worker to stop and records why it did, unless the isolate is ending. */
  async #supervise(worker: WorkerHandle): Promise<void> {
    await worker.done;
    this.#worker = null;
    clearTimeout(this.#budgetTimer);
    if (this.#ending !== null) return;
    if (worker.status === "fatal") {
      // The worker logged the fatal error itself; the pause is already committed by the claim.
      this.#lastOutcome = this.#snapshot("paused");
      this.#logger.warn(
        "worker stopped on unsupported work: no successor; requests answer paused until an " +
          "operator clears the pause (sluice.clear_restart_pause)",
        { worker_id: worker.workerId },
      );
    } else {
      this.#lastOutcome = this.#snapshot("stopped");
      // Deprecated by a rollout (or its poll loop failed): nothing asked this isolate to end, so
      // no successor; the next request starts a worker again after consulting the function's row.
      this.#logger.info("worker stopped by itself: no successor requested", {
        worker_id: worker.workerId,
      });
    }
  }

  #armWallClockBudget(): void {
    if (!this.onEdge || !Number.isFinite(this.#wallClockBudgetMs)) return;
    const remaining = this.#wallClockBudgetMs - (performance.now() - this.#createdAt);
    this.#budgetTimer = setTimeout(
      () => void this.#end("wall_clock_budget", this.#respawn),
      Math.max(0, remaining),
    );
  }

  #end(reason: EndReason, respawn: boolean): Promise<void> {
    if (this.#ended === null) {
      this.#ending = reason;
      this.#ended = this.#runEnd(reason, respawn).catch((error) => {
        this.#logger.error("ending the isolate failed", { error: describeError(error) });
      }).finally(() => {
        this.#endComplete = true;
      });
      if (respawn) this.#edgeRuntime?.waitUntil(this.#ended);
    }
    return this.#ended;
  }

  async #runEnd(reason: EndReason, respawn: boolean): Promise<void> {
    clearTimeout(this.#budgetTimer);
    this.#lifecycle?.removeEventListener("beforeunload", this.#onBeforeUnload);
    const worker = this.#worker ?? await (this.#starting ?? null);
    if (worker !== null) {
      const wasRunning = worker.status === "running";
      // An ending isolate drains by its deadline; a closed one by the worker's own grace.
      const ending = reason !== "closed";
      this.#logger.info("isolate ending: stopping the worker", {
        reason,
        worker_id: worker.workerId,
        drain_timeout_ms: ending ? this.#drainTimeoutMs : null,
      });
      const stopped = worker.stop(ending ? { graceMs: this.#drainGraceMs } : undefined);
      if (respawn && wasRunning) {
        // The successor takes over the queue as soon as this worker reads no more: tasks still
        // in flight here are started and hidden, so it cannot claim them twice. The deadline only
        // guards against a read that hangs on a dead connection.
        if (!(await settlesWithin(worker.pollingStopped, this.#drainTimeoutMs))) {
          this.#logger.warn("polling did not stop in time: requesting the successor anyway", {
            worker_id: worker.workerId,
            drain_timeout_ms: this.#drainTimeoutMs,
          });
        }
        if (!endedFatally(worker)) await this.#requestSuccessor(worker, reason);
      }
      await stopped;
    }
    await this.#life;
    if (this.#ownsPool) await this.#sql?.end({ timeout: 5 });
  }

  async #requestSuccessor(worker: WorkerHandle, reason: EndReason): Promise<void> {
    const fields = { worker_id: worker.workerId, reason };
    if (this.#selfUrl === null) {
      this.#logger.error(
        "cannot request a successor: the function URL is unknown; set SUPABASE_URL or pass selfUrl",
        fields,
      );
      return;
    }
    if (this.#secret === null) {
      this.#logger.error(noSecretMessage(this.functionName), fields);
      return;
    }
    let claimed: boolean;
    try {
      claimed = await claimRespawn(this.#sql as Sql, this.functionName, this.#seenInvokedAt);
    } catch (error) {
      this.#logger.error("cannot claim the respawn: no successor requested", {
        ...fields,
        error: describeError(error),
      });
      return;
    }
    if (!claimed) {
      this.#logger.info(
        "no successor requested: the function is disabled or restart-paused, or another " +
          "isolate already requested one",
        fields,
      );
      return;
    }
    await requestSuccessor({
      url: this.#selfUrl,
      secret: this.#secret,
      body: {
        reason: "respawn",
        ending: reason,
        predecessor: { ...fields, isolate_id: this.isolateId },
      },
      timeoutMs: SUCCESSOR_TIMEOUT_MS,
      logFields: fields,
    }, this.#logger);
  }

  #snapshot(
    status: WorkerFunctionState,
    details: {
      worker?: WorkerHandle | null;
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
        ? { workerId: worker.workerId, flowSlug: worker.flowSlug, queue: worker.queueName }
        : {}),
      ...(reason === undefined ? {} : { reason }),
      ...(pausedAt === undefined ? {} : { pausedAt }),
      ...(error === undefined ? {} : { error }),
    };
  }
}

/**
 * Whether the worker met unsupported work. A function, not an inline comparison: TypeScript would
 * narrow `status` to the `running` read before the stop, but a claim in flight when the stop
 * began can still end the poll loop fatally (final once `pollingStopped` resolved).
 */
function endedFatally(worker: WorkerHandle): boolean {
  return worker.status === "fatal";
}

/** The options meant for `startWorker`; the connection is replaced by the adapter's pool. */
function workerOnly(options: AnyWorkerFunctionOptions): AnyWorkerOptions {
  const {
    secret: _secret,
    selfUrl: _selfUrl,
    wallClockBudgetMs: _wallClockBudgetMs,
    drainTimeoutMs: _drainTimeoutMs,
    respawn: _respawn,
    edgeRuntime: _edgeRuntime,
    lifecycleEvents: _lifecycleEvents,
    connectionString: _connectionString,
    poolSize: _poolSize,
    ...worker
  } = options;
  return worker;
}

function noSecretMessage(functionName: string): string {
  return `Cannot authorize requests to worker function "${functionName}": no secret configured; ` +
    "set SLUICE_WORKER_SECRET (or SUPABASE_SERVICE_ROLE_KEY), or pass the secret option";
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function duration(
  functionName: string,
  name: "wallClockBudgetMs" | "drainTimeoutMs",
  options: AnyWorkerFunctionOptions,
  fallback: number,
  infiniteAllowed: boolean,
): number {
  const value = options[name] ?? fallback;
  if (
    typeof value !== "number" || Number.isNaN(value) || value < 0 ||
    (!infiniteAllowed && !Number.isFinite(value))
  ) {
    throw new RangeError(
      `Cannot create worker handler for "${functionName}": ${name} must be a ${
        infiniteAllowed ? "" : "finite "
      }number >= 0, got ${String(value)}`,
    );
  }
  return value;
}

function resolveSelfUrl(
  functionName: string,
  selfUrl: string | URL | undefined,
  supabaseUrl: string | null,
  fail: (message: string) => never,
): URL | null {
  if (selfUrl !== undefined) {
    try {
      return new URL(selfUrl);
    } catch {
      return fail(`selfUrl must be an absolute URL, got ${JSON.stringify(String(selfUrl))}`);
    }
  }
  if (supabaseUrl === null) return null;
  try {
    const base = new URL(supabaseUrl);
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    return new URL(`functions/v1/${encodeURIComponent(functionName)}`, base);
  } catch {
    return fail(`SUPABASE_URL must be an absolute URL, got ${JSON.stringify(supabaseUrl)}`);
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

function processEnv(): Record<string, string> {
  try {
    return Deno.env.toObject();
  } catch {
    // No --allow-env: nothing configured from the environment.
    return {};
  }
}
