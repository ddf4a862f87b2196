/**
 * The configuration of a worker function host, resolved once at creation from its options and
 * the environment: the worker's own options through the worker's resolver (`resolveWorkerConfig`:
 * target, settings, connection, with the Edge's URL variables and `SLUICE_ENVIRONMENT` /
 * `SLUICE_ACTIVATE_ALIAS` fallbacks), then the Edge runtime hooks, the lifecycle durations, the
 * secret and the function's own URL.
 *
 * @module
 */

import type { DeployableFlow } from "../dsl/types.ts";
import { stepsHostedBy } from "../dsl/routing.ts";
import {
  type ConnectionSource,
  DATABASE_URL_VARIABLES,
  resolveWorkerConfig,
  type WorkerConfig,
} from "../worker/worker_config.ts";
import type {
  EdgeRuntimeLike,
  WorkerFunctionOptions,
  WorkerGroupFunctionOptions,
} from "./edge_options.ts";

const DEFAULT_WALL_CLOCK_BUDGET_MS = 140_000;
const DEFAULT_DRAIN_TIMEOUT_MS = 8_000;
/** Part of the drain timeout kept for reporting results after the task grace period. */
const RESULT_FLUSH_RESERVE_MS = 3_000;

interface GlobalWithEdgeRuntime {
  EdgeRuntime?: EdgeRuntimeLike;
}

/** A host's resolved configuration. */
export interface HostConfig {
  readonly functionName: string;
  readonly edgeRuntime: EdgeRuntimeLike | null;
  /** Where `beforeunload` is listened for. */
  readonly lifecycle: EventTarget | null;
  readonly wallClockBudgetMs: number;
  readonly drainTimeoutMs: number;
  /** When the isolate ends: how long in-flight tasks may run (the drain minus the flush reserve). */
  readonly drainGraceMs: number;
  readonly respawn: boolean;
  /** The bearer secret, or `null` when none is configured (every request is refused). */
  readonly secret: string | null;
  /** The function's own URL, or `null` when unknown (no successor can be requested). */
  readonly selfUrl: URL | null;
  readonly connection: ConnectionSource;
  /**
   * The workers' resolved options, one per hosted worker (`launchWorker` runs each with the
   * host's pool as the connection): one for `createWorkerHandler`/`serveWorker`, one per
   * co-hosted step for `serveWorkers`.
   */
  readonly workers: readonly HostedWorker[];
  /** The exporter's flush (`telemetry.flush`), or `null`. */
  readonly flushTelemetry: (() => Promise<void>) | null;
}

/** One worker a host starts: its flow and its resolved options. */
export interface HostedWorker {
  readonly flow: DeployableFlow;
  readonly config: WorkerConfig;
}

/**
 * Resolves a host's configuration.
 *
 * @throws {StepSlugError} When the worker's `stepSlug` does not fit the flow.
 * @throws {TypeError} When options are inconsistent (both `sql` and `connectionString`, an invalid
 * `selfUrl` or `SUPABASE_URL`).
 * @throws {RangeError} When a duration or `poolSize` is out of range.
 */
export function resolveHostConfig(
  flow: DeployableFlow,
  options: WorkerFunctionOptions,
): HostConfig {
  // The worker's own checks (stepSlug, functionName, every setting), at creation rather than at
  // the first request; the function name is needed from here on.
  const worker = resolveWorkerConfig(flow, options, {
    action: "create worker handler",
    context: (target) => `Cannot create worker handler for "${target.functionName}"`,
    urlVariables: DATABASE_URL_VARIABLES,
    settingsFromEnv: true,
  });
  return hostConfigOf([{ flow, config: worker }], options);
}

/**
 * The host configuration of a co-hosting function (`serveWorkers`): one worker per step of
 * `flows` that `withStepQueues(flow, { functions })` maps to `options.functionName`, all with
 * the same options.
 *
 * @throws {TypeError} When `functionName` is missing, `flows` is empty, a flow is not
 * step-queued, or a flow has no step hosted by the function (the error lists its functions).
 */
export function resolveGroupHostConfig(
  flows: readonly DeployableFlow[],
  options: WorkerGroupFunctionOptions,
): HostConfig {
  const functionName: unknown = options?.functionName;
  if (typeof functionName !== "string" || functionName === "") {
    throw new TypeError(
      `Cannot create worker handler: functionName must name the co-hosting function (a name ` +
        `given in withStepQueues(flow, { functions })), got ${JSON.stringify(functionName)}`,
    );
  }
  const context = `Cannot create worker handler for "${functionName}"`;
  if (!Array.isArray(flows) || flows.length === 0) {
    throw new TypeError(`${context}: give the flows whose steps it hosts, got none`);
  }
  const workers = flows.flatMap((flow) =>
    stepsHostedBy(flow, functionName, context).map((stepSlug) => ({
      flow,
      config: resolveWorkerConfig(flow, { ...options, functionName, stepSlug }, {
        action: "create worker handler",
        context: () => context,
        urlVariables: DATABASE_URL_VARIABLES,
        settingsFromEnv: true,
      }),
    }))
  );
  return hostConfigOf(workers, options);
}

/** What every host shares, from its first worker's options and the Edge options. */
function hostConfigOf(
  workers: readonly HostedWorker[],
  options: WorkerFunctionOptions | WorkerGroupFunctionOptions,
): HostConfig {
  const worker = workers[0].config;
  const { functionName } = worker.target;
  const context = `Cannot create worker handler for "${functionName}"`;
  const setting = (name: string) => {
    const value = worker.env[name];
    return value === undefined || value === "" ? null : value;
  };

  const edgeRuntime = options.edgeRuntime !== undefined
    ? options.edgeRuntime
    : (globalThis as GlobalWithEdgeRuntime).EdgeRuntime ?? null;
  const drainTimeoutMs = duration(context, "drainTimeoutMs", options, DEFAULT_DRAIN_TIMEOUT_MS);
  const secret = options.secret ?? setting("SLUICE_WORKER_SECRET") ??
    setting("SUPABASE_SERVICE_ROLE_KEY");
  return {
    functionName,
    edgeRuntime,
    lifecycle: options.lifecycleEvents ?? (edgeRuntime !== null ? globalThis : null),
    wallClockBudgetMs: duration(
      context,
      "wallClockBudgetMs",
      options,
      DEFAULT_WALL_CLOCK_BUDGET_MS,
    ),
    drainTimeoutMs,
    drainGraceMs: Math.max(0, drainTimeoutMs - RESULT_FLUSH_RESERVE_MS),
    respawn: options.respawn ?? true,
    secret: secret === "" ? null : secret,
    selfUrl: resolveSelfUrl(context, functionName, options.selfUrl, setting("SUPABASE_URL")),
    connection: worker.connection,
    workers,
    flushTelemetry: telemetryFlush(context, options.telemetry),
  };
}

/** The error of a host without a secret: names the variables to set. */
export function noSecretMessage(functionName: string): string {
  return `Cannot authorize requests to worker function "${functionName}": no secret configured; ` +
    "set SLUICE_WORKER_SECRET (or SUPABASE_SERVICE_ROLE_KEY), or pass the secret option";
}

/** The error of a host without a database connection: names the variables to set. */
export function noConnectionMessage(functionName: string): string {
  return `Cannot start worker function "${functionName}": no database connection; set ` +
    "SLUICE_DATABASE_URL (or SUPABASE_DB_URL, or DATABASE_URL), or pass connectionString or sql";
}

/** A duration option; only the wall-clock budget may be infinite. */
function duration(
  context: string,
  name: "wallClockBudgetMs" | "drainTimeoutMs",
  options: WorkerFunctionOptions,
  fallback: number,
): number {
  const infiniteAllowed = name === "wallClockBudgetMs";
  const value = options[name] ?? fallback;
  if (
    typeof value !== "number" || Number.isNaN(value) || value < 0 ||
    (!infiniteAllowed && !Number.isFinite(value))
  ) {
    throw new RangeError(
      `${context}: ${name} must be a ${infiniteAllowed ? "" : "finite "}number >= 0, got ${
        String(value)
      }`,
    );
  }
  return value;
}

function resolveSelfUrl(
  context: string,
  functionName: string,
  selfUrl: string | URL | undefined,
  supabaseUrl: string | null,
): URL | null {
  if (selfUrl !== undefined) {
    try {
      return new URL(selfUrl);
    } catch {
      throw new TypeError(
        `${context}: selfUrl must be an absolute URL, got ${JSON.stringify(String(selfUrl))}`,
      );
    }
  }
  if (supabaseUrl === null) return null;
  try {
    const base = new URL(supabaseUrl);
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    return new URL(`functions/v1/${encodeURIComponent(functionName)}`, base);
  } catch {
    throw new TypeError(
      `${context}: SUPABASE_URL must be an absolute URL, got ${JSON.stringify(supabaseUrl)}`,
    );
  }
}

/** The flush of `telemetry`, bound to it; refuses anything but an object with a flush function. */
function telemetryFlush(context: string, telemetry: unknown): (() => Promise<void>) | null {
  if (telemetry === undefined) return null;
  const flush = (telemetry as { flush?: unknown } | null)?.flush;
  if (typeof flush !== "function") {
    throw new TypeError(
      `${context}: telemetry must be an object with a flush() function, got ${
        telemetry === null
          ? "null"
          : typeof flush === "undefined"
          ? "no flush"
          : `flush of type ${typeof flush}`
      }`,
    );
  }
  return () => Promise.resolve(flush.call(telemetry));
}
