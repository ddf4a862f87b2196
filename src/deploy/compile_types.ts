/**
 * The types of startup compilation, shared by `compileFlow()` and the loop behind it.
 *
 * @module
 */

/**
 * Where a flow is compiled: `production` never changes a compiled flow; `development` (a local
 * database only) recompiles a changed flow destructively once its old workers have drained.
 *
 * @example Usage
 * ```ts
 * import type { CompileEnvironment } from "@sluice/sluice";
 *
 * const environment: CompileEnvironment = "development";
 * ```
 */
export type CompileEnvironment = "production" | "development";

/**
 * What compilation did: `compiled` (the flow was new), `verified` (same shape; runtime options
 * refreshed), `recompiled` (development only: the flow was replaced and its finished runs deleted;
 * with runs in flight a recompile throws `RecompileInFlightError` instead).
 *
 * @example Usage
 * ```ts
 * import type { CompileOutcome } from "@sluice/sluice/admin";
 *
 * const outcome: CompileOutcome = "verified";
 * ```
 */
export type CompileOutcome = "compiled" | "verified" | "recompiled";

/**
 * The result of {@linkcode compileFlow}.
 *
 * @example Usage
 * ```ts
 * import type { CompileResult } from "@sluice/sluice/admin";
 *
 * const result: CompileResult = { outcome: "compiled", differences: [] };
 * ```
 */
export interface CompileResult {
  /** What compilation did. */
  readonly outcome: CompileOutcome;
  /** For `recompiled`: what had changed. Empty otherwise. */
  readonly differences: readonly string[];
  /**
   * For `recompiled`: the finished runs the recompile deleted, counted per status
   * (`{ completed: 3, failed: 1 }`). A recompile never deletes a run in flight: it throws
   * `RecompileInFlightError` instead. Empty otherwise.
   */
  readonly deletedRuns?: Readonly<Record<string, number>>;
}

/**
 * Options of {@linkcode compileFlow}.
 *
 * @example Usage
 * ```ts
 * import type { CompileFlowOptions } from "@sluice/sluice/admin";
 *
 * const options: CompileFlowOptions = { environment: "development", drainTimeoutMs: 30_000 };
 * ```
 */
export interface CompileFlowOptions {
  /**
   * `production` or `development`.
   *
   * @default {"production"}
   */
  readonly environment?: CompileEnvironment;
  /**
   * Development recompilation: how long to wait for the old workers to drain and stop.
   *
   * @default {60000}
   */
  readonly drainTimeoutMs?: number;
  /**
   * Development recompilation: how often to ask again while old workers drain.
   *
   * @default {500}
   */
  readonly drainPollIntervalMs?: number;
}
