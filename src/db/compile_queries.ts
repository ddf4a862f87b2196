/**
 * The statement of startup compilation (`src/deploy/compile.ts`, behind `compileFlow()` and every
 * worker's start).
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";

/** What `sluice.ensure_flow_compiled` answered (docs/internals/contracts.md §3). */
export interface CompileOutcomeRow {
  readonly outcome: "compiled" | "verified" | "recompiled" | "mismatch" | "draining" | "in_flight";
  readonly differences: readonly string[];
  /** `recompiled`: the deleted runs, counted per status. */
  readonly deleted_runs?: Readonly<Record<string, number>>;
  /** `in_flight`: how many runs of the flow are started. */
  readonly in_flight_runs?: number;
  /** `in_flight`: how many steps of those runs wait. */
  readonly waiting_steps?: number;
  /** `in_flight`: the waiting steps (at most 20). */
  readonly waiting?: readonly {
    readonly run_id: string;
    readonly step_slug: string;
    readonly wait_key: string | null;
    readonly wait_until: string | null;
  }[];
  readonly live_workers?: number;
  /** The flow's compile generation (every outcome but `mismatch` and `draining`). */
  readonly generation?: number;
}

/** `sluice.ensure_flow_compiled`: compiles or verifies the definition (JSON text). */
export async function ensureFlowCompiled(
  sql: Sql,
  definitionJson: string,
  environment: string,
): Promise<CompileOutcomeRow> {
  const [{ result }] = await sql<{ result: CompileOutcomeRow }[]>`
    select sluice.ensure_flow_compiled(${definitionJson}::text::jsonb, ${environment}) as result`;
  return result;
}
