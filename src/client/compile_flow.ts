/**
 * `compileFlow()`: the TypeScript side of startup compilation (`sluice.ensure_flow_compiled`).
 *
 * @module
 */

import type { Sql } from "../db/postgres.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { compileFlowGeneration } from "./_compile_generation.ts";

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
 * refreshed), `recompiled` (development only: the flow and all its data were replaced).
 *
 * @example Usage
 * ```ts
 * import type { CompileOutcome } from "@sluice/sluice";
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
 * import type { CompileResult } from "@sluice/sluice";
 *
 * const result: CompileResult = { outcome: "compiled", differences: [] };
 * ```
 */
export interface CompileResult {
  /** What compilation did. */
  readonly outcome: CompileOutcome;
  /** For `recompiled`: what had changed. Empty otherwise. */
  readonly differences: readonly string[];
}

/**
 * Options of {@linkcode compileFlow}.
 *
 * @example Usage
 * ```ts
 * import type { CompileFlowOptions } from "@sluice/sluice";
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

/**
 * Compiles a flow at startup through `sluice.ensure_flow_compiled`: creates it when absent,
 * verifies it when present. A changed shape is a {@linkcode FlowShapeMismatchError} in
 * production; in development the flow's live workers are deprecated, and once they have stopped
 * the flow is recompiled (its runs are deleted). `startWorker()` calls this before anything else.
 *
 * @param sql The database client.
 * @param flow A plain or step-queued flow.
 * @param options The environment and the development drain timeout.
 * @returns What compilation did.
 * @throws {FlowShapeMismatchError} In production, when the compiled flow has another shape.
 * @throws {Error} When old workers did not stop within `drainTimeoutMs` (development), or the
 * database rejected the definition (the error names the offending value).
 *
 * @example Usage
 * ```ts ignore
 * import { compileFlow, connect, Flow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
 * const { outcome } = await compileFlow(sql, flow, { environment: "development" });
 * console.log(outcome); // "compiled" the first time, then "verified"
 * ```
 */
export async function compileFlow(
  sql: Sql,
  flow: DeployableFlow,
  options: CompileFlowOptions = {},
): Promise<CompileResult> {
  const { outcome, differences } = await compileFlowGeneration(sql, flow, options);
  return { outcome, differences };
}
