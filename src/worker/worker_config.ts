/**
 * `resolveWorkerConfig()`: the one resolver of a worker's options, used by `startWorker()` and by
 * the Edge host (`createWorkerHandler()`, `serveWorker()`) alike. It checks every option,
 * synchronously and before any database access, and returns what a worker runs with: its target
 * (queue, steps, function, alias), the environment handed to handlers, where the connection comes
 * from (a client of the caller, or a URL and the size of the pool sluice opens for it), and the
 * runtime settings. Not part of the public API.
 *
 * @module
 */

import type { CompileEnvironment } from "../deploy/compile_types.ts";
import type { Sql } from "../db/driver/postgres.ts";
import { isDeployedFlow } from "../dsl/deployed_flow.ts";
import { DEFAULT_MAX_JSON_BYTES } from "../dsl/json_text.ts";
import { routingOf } from "../dsl/routing.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { jsonLineSink, type LogLevel, type LogSink } from "./logger.ts";
import type { RuntimeSettings } from "./_runtime.ts";
import type { AliasActivationMode, BaseWorkerOptions, WorkerOptions } from "./worker_options.ts";
import { targetOf, type WorkerTarget } from "./worker_target.ts";

/** Environment variables as handlers and the Edge host see them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Where a worker's connection comes from. */
export type ConnectionSource =
  | { readonly kind: "given"; readonly sql: Sql }
  | { readonly kind: "url"; readonly url: string; readonly poolSize: number }
  | { readonly kind: "none" };

/** The runtime settings resolved from the options (the rest of `RuntimeSettings` is per start). */
export type WorkerSettings =
  & Omit<
    RuntimeSettings,
    "workerId" | "functionName" | "queue" | "supported" | "handlers" | "waits" | "ownsPool" | "env"
  >
  & {
    readonly environment: CompileEnvironment;
    /** Wake up on NOTIFY (`listen`, default `true`). */
    readonly listen: boolean;
    readonly logLevel: LogLevel;
    /** `logger`, else `jsonLineSink`. */
    readonly logger: LogSink;
    /** How long startup retries while the database is unreachable. */
    readonly startupTimeoutMs: number;
  };

/** A worker's resolved options. */
export interface WorkerConfig {
  /** What the worker serves. */
  readonly target: WorkerTarget;
  /** `options.env`, else the process environment (empty without `--allow-env`). */
  readonly env: Env;
  readonly connection: ConnectionSource;
  readonly settings: WorkerSettings;
}

/** How the caller resolves the options. */
export interface ConfigSources {
  /** What the caller does, for errors before the target is known: `Cannot ${action}: ...`. */
  readonly action: string;
  /**
   * Start of every error message past the target's own checks, from the target, e.g.
   * `Cannot start worker for flow "orders"`.
   */
  readonly context: (target: WorkerTarget) => string;
  /**
   * Environment variables that hold a connection URL, tried in order when the options give no
   * connection.
   */
  readonly urlVariables?: readonly string[];
  /**
   * A worker function's: `environment` and `activate`, when the options leave them unset, come
   * from `SLUICE_ENVIRONMENT` and `SLUICE_ACTIVATE_ALIAS` (one project secret configures every
   * generated function).
   */
  readonly settingsFromEnv?: boolean;
}

/** Pool size of a pool sluice opens from a URL. */
const DEFAULT_POOL_SIZE = 4;

/**
 * Resolves every option of a worker of `flow`. The caller's signature has tied the options to
 * the kind of flow; this checks them again at run time, for JavaScript callers and values known
 * only then.
 *
 * @throws {StepSlugError} When `stepSlug` does not fit the flow (names it and the valid slugs).
 * @throws {TypeError} When `options` is not an object, `activate` or `environment` is invalid
 * (also from the environment), both `sql` and `connectionString` are given, or
 * `connectionString` is not a non-empty string.
 * @throws {RangeError} When a numeric option is out of range.
 */
export function resolveWorkerConfig(
  flow: DeployableFlow,
  options: WorkerOptions,
  sources: ConfigSources,
): WorkerConfig {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Cannot ${sources.action}: options must be an object, got ${String(options)}`,
    );
  }
  const env = options.env ?? processEnv();
  const setting = (name: string): string | undefined => {
    if (sources.settingsFromEnv !== true) return undefined;
    const value = env[name];
    return value === "" ? undefined : value;
  };
  const target = targetOf(flow, {
    ...options,
    activate: options.activate ?? activationSetting(flow, setting("SLUICE_ACTIVATE_ALIAS")),
  } as WorkerOptions);
  const context = sources.context(target);
  return {
    target,
    env,
    connection: connectionOf(context, options, env, sources.urlVariables ?? []),
    settings: settingsOf(
      context,
      options,
      setting("SLUICE_ENVIRONMENT"),
      routingOf(flow).flow.options.maxOutputBytes ?? DEFAULT_MAX_JSON_BYTES,
    ),
  };
}

/**
 * `SLUICE_ACTIVATE_ALIAS`, for a deployed flow whose options leave `activate` unset. Other flows
 * have no alias to activate and ignore it. A value other than `on-startup` or `manual` is refused,
 * naming the variable.
 */
function activationSetting(
  flow: DeployableFlow,
  value: string | undefined,
): AliasActivationMode | undefined {
  if (value === undefined || !isDeployedFlow(flow)) return undefined;
  if (value !== "on-startup" && value !== "manual") {
    throw new TypeError(
      `Cannot create worker handler for deployed flow ${JSON.stringify(flow.alias)}: ` +
        `SLUICE_ACTIVATE_ALIAS must be "on-startup" or "manual", got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/**
 * Environment variables holding the database URL, in order of preference: sluice's own, the one
 * Supabase's platform sets, then the `DATABASE_URL` a developer has exported for the CLI.
 */
export const DATABASE_URL_VARIABLES = [
  "SLUICE_DATABASE_URL",
  "SUPABASE_DB_URL",
  "DATABASE_URL",
] as const;

/** Where the connection comes from: `sql`, `connectionString`, else the URL variables. */
function connectionOf(
  context: string,
  options: BaseWorkerOptions,
  env: Env,
  urlVariables: readonly string[],
): ConnectionSource {
  const fail = (message: string): never => {
    throw new TypeError(`${context}: ${message}`);
  };
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  if (typeof poolSize !== "number" || !Number.isInteger(poolSize) || poolSize < 1) {
    throw new RangeError(`${context}: poolSize must be an integer >= 1, got ${String(poolSize)}`);
  }
  if (options.sql !== undefined) {
    if (options.connectionString !== undefined) {
      fail("give either sql or connectionString, not both");
    }
    return { kind: "given", sql: options.sql };
  }
  if (options.connectionString !== undefined) {
    if (typeof options.connectionString !== "string" || options.connectionString === "") {
      fail("connectionString must be a non-empty string");
    }
    return { kind: "url", url: options.connectionString, poolSize };
  }
  for (const name of urlVariables) {
    const url = env[name];
    if (url !== undefined && url !== "") return { kind: "url", url, poolSize };
  }
  return { kind: "none" };
}

/** The runtime settings, checked; `maxOutputBytes` defaults to the flow's limit. */
function settingsOf(
  context: string,
  options: BaseWorkerOptions,
  environmentVariable: string | undefined,
  flowMaxOutputBytes: number,
): WorkerSettings {
  const environment: unknown = options.environment ?? environmentVariable ?? "production";
  if (environment !== "production" && environment !== "development") {
    const name = options.environment === undefined ? "SLUICE_ENVIRONMENT" : "environment";
    throw new TypeError(
      `${context}: ${name} must be "production" or "development", got ${
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
    startupTimeoutMs: range("startupTimeoutMs", 60000, 0, false),
    maxOutputBytes: range("maxOutputBytes", flowMaxOutputBytes, 1, true),
    listen: options.listen !== false,
    logLevel: options.logLevel ?? "info",
    logger: options.logger ?? jsonLineSink,
  };
}

/** The process environment; empty without `--allow-env`. */
export function processEnv(): Record<string, string> {
  try {
    return Deno.env.toObject();
  } catch {
    return {};
  }
}
