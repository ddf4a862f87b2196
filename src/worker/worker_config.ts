/**
 * `resolveWorkerConfig()`: the options `startWorker()` and the Edge host share, resolved in one
 * place — the environment handed to handlers, and where the connection comes from (a client of
 * the caller, or a URL and the size of the pool sluice opens for it). Not part of the public API.
 *
 * @module
 */

import type { Sql } from "../db/postgres.ts";
import type { BaseWorkerOptions } from "./worker_options.ts";

/** Environment variables as handlers and the Edge host see them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** Where a worker's connection comes from. */
export type ConnectionSource =
  | { readonly kind: "given"; readonly sql: Sql }
  | { readonly kind: "url"; readonly url: string; readonly poolSize: number }
  | { readonly kind: "none" };

/** The resolved shared options. */
export interface WorkerConfig {
  /** `options.env`, else the process environment (empty without `--allow-env`). */
  readonly env: Env;
  readonly connection: ConnectionSource;
}

/** How the caller resolves the configuration. */
export interface ConfigSources {
  /** Start of every error message, e.g. `Cannot start worker for flow "orders"`. */
  readonly context: string;
  /**
   * Environment variables that hold a connection URL, tried in order when the options give no
   * connection.
   */
  readonly urlVariables?: readonly string[];
}

/** Pool size of a pool sluice opens from a URL. */
const DEFAULT_POOL_SIZE = 4;

/**
 * Resolves the environment and the connection of a worker.
 *
 * @throws {TypeError} When both `sql` and `connectionString` are given, or `connectionString` is
 * not a non-empty string.
 * @throws {RangeError} When `poolSize` is not an integer >= 1.
 */
export function resolveWorkerConfig(
  options: Pick<BaseWorkerOptions, "sql" | "connectionString" | "poolSize" | "env">,
  sources: ConfigSources,
): WorkerConfig {
  const fail = (message: string): never => {
    throw new TypeError(`${sources.context}: ${message}`);
  };
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  if (typeof poolSize !== "number" || !Number.isInteger(poolSize) || poolSize < 1) {
    throw new RangeError(
      `${sources.context}: poolSize must be an integer >= 1, got ${String(poolSize)}`,
    );
  }
  const env = options.env ?? processEnv();
  if (options.sql !== undefined) {
    if (options.connectionString !== undefined) {
      fail("give either sql or connectionString, not both");
    }
    return { env, connection: { kind: "given", sql: options.sql } };
  }
  if (options.connectionString !== undefined) {
    if (typeof options.connectionString !== "string" || options.connectionString === "") {
      fail("connectionString must be a non-empty string");
    }
    return { env, connection: { kind: "url", url: options.connectionString, poolSize } };
  }
  for (const name of sources.urlVariables ?? []) {
    const url = env[name];
    if (url !== undefined && url !== "") return { env, connection: { kind: "url", url, poolSize } };
  }
  return { env, connection: { kind: "none" } };
}

/** The process environment; empty without `--allow-env`. */
export function processEnv(): Record<string, string> {
  try {
    return Deno.env.toObject();
  } catch {
    return {};
  }
}
