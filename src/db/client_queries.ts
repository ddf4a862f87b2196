/**
 * Every SQL statement of the producer API (`src/client/`), one function each, typed on both
 * sides. Starting a run and polling its outcome are sent as simple queries with inlined literals:
 * one round trip each (see `sql_literal.ts`).
 *
 * @module
 */

import type { Queryable, Sql } from "./postgres.ts";
import { sentAtOnce, textLiteral, uuidLiteral } from "./sql_literal.ts";

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

/**
 * Starts a run with the input (JSON text, or `undefined` for SQL `null`) and resolves the run
 * id: `sluice.start_flow` resolves `flowRef` as an alias first; with `concrete`,
 * `sluice.start_flow_version` starts exactly the flow `flowRef`, never through an alias.
 */
export async function startFlowRun(
  sql: Queryable,
  run: {
    flowRef: string;
    concrete: boolean;
    inputJson: string | undefined;
    runId: string | undefined;
  },
): Promise<string> {
  const body = run.inputJson === undefined ? "null" : `${textLiteral(run.inputJson)}::jsonb`;
  const runId = run.runId === undefined ? "null::uuid" : uuidLiteral(run.runId);
  const fn = run.concrete ? "sluice.start_flow_version" : "sluice.start_flow";
  const [{ run_id }] = await sql.unsafe<{ run_id: string }[]>(
    sentAtOnce(`select ${fn}(${textLiteral(run.flowRef)}, ${body}, ${runId}) as run_id`),
  );
  return run_id;
}

/** A run's outcome so far, as far as waiting for it cares. */
export interface RunOutcomeRow {
  readonly status: string;
  readonly output: unknown;
  readonly error_message: string | null;
  readonly cancel_reason: string | null;
  readonly flow_slug: string;
  /** A failed step of the run, if any. */
  readonly failed_step: string | null;
}

/** Reads a run's status and outcome; `null` when there is no such run. */
export async function readRunOutcome(sql: Sql, runId: string): Promise<RunOutcomeRow | null> {
  const rows = await sql.unsafe<RunOutcomeRow[]>(sentAtOnce(`
      select r.status, r.output, r.error_message, r.cancel_reason, r.flow_slug,
        (select ss.step_slug from sluice.step_states ss
         where ss.run_id = r.run_id and ss.status = 'failed' limit 1) as failed_step
      from sluice.runs r where r.run_id = ${uuidLiteral(runId)}`));
  return rows[0] ?? null;
}

/** A run row with its step states (timestamps of steps as JSON text). */
export interface RunRow {
  readonly run_id: string;
  readonly flow_slug: string;
  readonly started_via: string;
  readonly status: string;
  readonly input: unknown;
  readonly output: unknown;
  readonly error_message: string | null;
  readonly remaining_steps: number;
  readonly started_at: Date;
  readonly completed_at: Date | null;
  readonly failed_at: Date | null;
  readonly cancelled_at: Date | null;
  readonly cancel_reason: string | null;
  readonly cancelled_by: string | null;
  readonly retry_count: number;
  readonly retried_at: Date | null;
  readonly retried_by: string | null;
  readonly steps: readonly {
    readonly step_slug: string;
    readonly status: string;
    readonly remaining_deps: number;
    readonly initial_tasks: number | null;
    readonly remaining_tasks: number | null;
    readonly output: unknown;
    readonly skip_reason: string | null;
    readonly error_message: string | null;
    readonly created_at: string;
    readonly started_at: string | null;
    readonly completed_at: string | null;
    readonly failed_at: string | null;
    readonly skipped_at: string | null;
    readonly cancelled_at: string | null;
  }[];
}

/** Reads a run and its step states in one snapshot; `null` when there is no such run. */
export async function readRun(sql: Queryable, runId: string): Promise<RunRow | null> {
  const rows = await sql<RunRow[]>`
    select r.run_id, r.flow_slug, r.started_via, r.status, r.input, r.output, r.error_message,
      r.remaining_steps, r.started_at, r.completed_at, r.failed_at, r.cancelled_at,
      r.cancel_reason, r.cancelled_by, r.retry_count, r.retried_at, r.retried_by,
      coalesce((
        select jsonb_agg(jsonb_build_object(
          'step_slug', ss.step_slug, 'status', ss.status, 'remaining_deps', ss.remaining_deps,
          'initial_tasks', ss.initial_tasks, 'remaining_tasks', ss.remaining_tasks,
          'output', ss.output, 'skip_reason', ss.skip_reason, 'error_message', ss.error_message,
          'created_at', ss.created_at, 'started_at', ss.started_at,
          'completed_at', ss.completed_at, 'failed_at', ss.failed_at,
          'skipped_at', ss.skipped_at, 'cancelled_at', ss.cancelled_at
        ) order by s.step_index)
        from sluice.step_states ss
        join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
        where ss.run_id = r.run_id
      ), '[]'::jsonb) as steps
    from sluice.runs r
    where r.run_id = ${runId}::uuid`;
  return rows[0] ?? null;
}

/** What `sluice.cancel_run` answered. */
export interface CancelRunRow {
  readonly run_id: string;
  readonly outcome: "cancelled" | "unchanged";
  readonly status: string;
  readonly tasks: number;
  readonly reason: string | null;
  readonly cancelled_at: string | null;
}

/** `sluice.cancel_run`: cancels a started run (raises SQLSTATE P0002 for an unknown id). */
export async function cancelRunRow(
  sql: Queryable,
  runId: string,
  reason: string | null,
): Promise<CancelRunRow> {
  const [{ result }] = await sql<{ result: CancelRunRow }[]>`
    select sluice.cancel_run(${runId}::uuid, ${reason}::text) as result`;
  return result;
}

/** What `sluice.cancel_runs` answered. */
export interface CancelRunsRow {
  readonly cancelled: number;
  readonly run_ids: readonly string[];
  readonly more: boolean;
}

/** `sluice.cancel_runs`: cancels one batch of a flow's started runs. */
export async function cancelRunsRow(
  sql: Queryable,
  filter: {
    readonly flowSlug: string;
    readonly reason: string | null;
    readonly startedVia: string | null;
    readonly startedBefore: Date | null;
    readonly batchSize: number;
  },
): Promise<CancelRunsRow> {
  const [{ result }] = await sql<{ result: CancelRunsRow }[]>`
    select sluice.cancel_runs(${filter.flowSlug}::text, ${filter.reason}::text,
      ${filter.startedVia}::text, ${filter.startedBefore}::timestamptz,
      ${filter.batchSize}::integer) as result`;
  return result;
}

/** What `sluice.retry_run` answered. */
export interface RetryRunRow {
  readonly run_id: string;
  readonly outcome: "retried" | "unchanged";
  readonly status: string;
  readonly retry_count: number;
  readonly tasks: number;
  readonly steps: number;
}

/**
 * `sluice.retry_run`: resumes a failed or cancelled run (raises SQLSTATE P0002 for an unknown id,
 * SLR01 when a step has no live worker and `force` is off).
 */
export async function retryRunRow(
  sql: Queryable,
  runId: string,
  force: boolean,
): Promise<RetryRunRow> {
  const [{ result }] = await sql<{ result: RetryRunRow }[]>`
    select sluice.retry_run(${runId}::uuid, ${force}::boolean) as result`;
  return result;
}
