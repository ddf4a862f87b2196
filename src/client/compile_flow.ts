/**
 * `compileFlow()`: the TypeScript side of startup compilation (`sluice.ensure_flow_compiled`).
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import { compileFlowGeneration } from "../deploy/compile.ts";

export type {
  CompileEnvironment,
  CompileFlowOptions,
  CompileOutcome,
  CompileResult,
} from "../deploy/compile_types.ts";
import type { CompileFlowOptions, CompileResult } from "../deploy/compile_types.ts";

/**
 * Compiles a flow at startup through `sluice.ensure_flow_compiled`: creates it when absent,
 * verifies it when present. A changed shape is a {@linkcode FlowShapeMismatchError} in
 * production; in development the flow's live workers are deprecated, and once they have stopped
 * the flow is recompiled (its finished runs are deleted); while runs of the flow are in flight it
 * refuses with {@linkcode RecompileInFlightError} and changes nothing. `startWorker()` calls this
 * before anything else.
 *
 * @param sql The database client.
 * @param flow A plain or step-queued flow.
 * @param options The environment and the development drain timeout.
 * @returns What compilation did.
 * @throws {FlowShapeMismatchError} In production, when the compiled flow has another shape.
 * @throws {RecompileInFlightError} In development, when runs of the changed flow are in flight.
 * @throws {Error} When old workers did not stop within `drainTimeoutMs` (development), or the
 * database rejected the definition (the error names the offending value).
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow } from "@sluice/sluice";
 * import { compileFlow } from "@sluice/sluice/admin";
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
  const { outcome, differences, deletedRuns } = await compileFlowGeneration(sql, flow, options);
  return deletedRuns === undefined
    ? { outcome, differences }
    : { outcome, differences, deletedRuns };
}
