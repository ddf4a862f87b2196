/**
 * The statement of startup compilation (`src/deploy/compile.ts`, behind `compileFlow()` and every
 * worker's start).
 *
 * @module
 */

import type { Sql } from "./postgres.ts";

/** What `sluice.ensure_flow_compiled` answered (docs/internals/contracts.md §3). */
export interface CompileOutcomeRow {
  readonly outcome: "compiled" | "verified" | "recompiled" | "mismatch" | "draining";
  readonly differences: readonly string[];
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
