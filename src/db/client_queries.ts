/**
 * Every SQL statement of the producer API (`src/client/`), one function each, typed on both
 * sides. Starting a run and polling its outcome are sent as simple queries with inlined literals:
 * one round trip each (see `inline_sql.ts`).
 *
 * @module
 */

import type { Queryable, Sql } from "./driver/postgres.ts";
import { inline, jsonb, type JsonInput, SerializedJson, simpleQuery, uuid } from "./inline_sql.ts";

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
    /** The producer's W3C trace context, recorded on the run; `null` or absent for none. */
    traceparent?: string | null;
    /** Start options (`sluice.check_start_options`); none calls the three-argument start. */
    options?: { readonly [key: string]: JsonInput };
  },
): Promise<string> {
  const input = run.inputJson === undefined ? null : jsonb(new SerializedJson(run.inputJson));
  const runId = uuid(run.runId ?? null);
  const options = run.options === undefined ? undefined : jsonb(run.options);
  const start = options === undefined
    ? run.concrete
      ? inline`sluice.start_flow_version(${run.flowRef}, ${input}, ${runId})`
      : inline`sluice.start_flow(${run.flowRef}, ${input}, ${runId})`
    : run.concrete
    ? inline`sluice.start_flow_version(${run.flowRef}, ${input}, ${runId}, ${options})`
    : inline`sluice.start_flow(${run.flowRef}, ${input}, ${runId}, ${options})`;
  // The setting is local to the statement's transaction (the caller's, on a transaction), and
  // the function in FROM runs before the select list: sluice.create_run records it on the run.
  const [{ run_id }] = await simpleQuery<{ run_id: string }[]>(
    sql,
    run.traceparent == null ? inline`select ${start} as run_id` : inline`select ${start} as run_id
        from pg_catalog.set_config('sluice.traceparent', ${run.traceparent}, true)`,
  );
  return run_id;
}

/**
 * The pending debounced start whose run will have the id `runId` (`sluice.debounced_starts`),
 * or `null`: no start is pending with that id (its run exists, or never will).
 */
export async function readPendingStart(
  sql: Queryable,
  runId: string,
): Promise<{ readonly error_message: string | null } | null> {
  const rows = await simpleQuery<{ error_message: string | null }[]>(
    sql,
    inline`select d.error_message from sluice.debounced_starts d where d.run_id = ${uuid(runId)}`,
  );
  return rows[0] ?? null;
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
  const rows = await simpleQuery<RunOutcomeRow[]>(
    sql,
    inline`
      select r.status, r.output, r.error_message, r.cancel_reason, r.flow_slug,
        (select ss.step_slug from sluice.step_states ss
         where ss.run_id = r.run_id and ss.status = 'failed' limit 1) as failed_step
      from sluice.runs r where r.run_id = ${uuid(runId)}`,
  );
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
    readonly wait_key: string | null;
    readonly wait_until: string | null;
    readonly waiting_at: string | null;
  }[];
}

/** Reads a run and its step states in one snapshot; `null` when there is no such run. */
export async function readRun(sql: Queryable, runId: string): Promise<RunRow | null> {
  const rows = await sql<RunRow[]>`
    select r.run_id, r.flow_slug, r.started_via, r.status, r.input, r.output, r.error_message,
      r.remaining_steps, r.started_at, r.completed_at, r.failed_at, r.cancelled_at,
      r.cancel_reason, r.cancelled_by, r.retry_count, r.retried_at, r.retried_by,
      coalesce((
        select pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
          'step_slug', ss.step_slug, 'status', ss.status, 'remaining_deps', ss.remaining_deps,
          'initial_tasks', ss.initial_tasks, 'remaining_tasks', ss.remaining_tasks,
          'output', ss.output, 'skip_reason', ss.skip_reason, 'error_message', ss.error_message,
          'created_at', ss.created_at, 'started_at', ss.started_at,
          'completed_at', ss.completed_at, 'failed_at', ss.failed_at,
          'skipped_at', ss.skipped_at, 'cancelled_at', ss.cancelled_at,
          'wait_key', ss.wait_key, 'wait_until', ss.wait_until, 'waiting_at', ss.waiting_at
        ) order by s.step_index)
        from sluice.step_states ss
        join sluice.steps s on s.flow_slug = ss.flow_slug and s.step_slug = ss.step_slug
        where ss.run_id = r.run_id
      ), '[]'::jsonb) as steps
    from sluice.runs r
    where r.run_id = ${runId}::uuid`;
  return rows[0] ?? null;
}

/** A task row of a run (the finish time is whichever terminal timestamp is set). */
export interface RunTaskRow {
  readonly step_slug: string;
  readonly task_index: number;
  readonly status: string;
  readonly attempts_count: number;
  readonly requeued_count: number;
  readonly error_message: string | null;
  readonly queue_name: string;
  readonly queued_at: Date;
  readonly started_at: Date | null;
  readonly finished_at: Date | null;
}

/** Reads every task of a run, in step order then task index. */
export async function readRunTasks(sql: Queryable, runId: string): Promise<RunTaskRow[]> {
  return await sql<RunTaskRow[]>`
    select t.step_slug, t.task_index, t.status, t.attempts_count, t.requeued_count,
      t.error_message, t.queue_name, t.queued_at, t.started_at,
      coalesce(t.completed_at, t.failed_at, t.skipped_at, t.cancelled_at) as finished_at
    from sluice.step_tasks t
    join sluice.steps s on s.flow_slug = t.flow_slug and s.step_slug = t.step_slug
    where t.run_id = ${runId}::uuid
    order by s.step_index, t.task_index`;
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

/** What `sluice.send_signal` answered. */
export interface SendSignalRow {
  readonly signal_id: string;
  readonly outcome: "sent" | "duplicate";
  readonly released: number;
}

/** `sluice.send_signal`: records a signal and completes the steps waiting on its key. */
export async function sendSignalRow(
  sql: Queryable,
  key: string,
  payloadJson: string,
  signalId: string,
): Promise<SendSignalRow> {
  const [{ result }] = await sql<{ result: SendSignalRow }[]>`
    select sluice.send_signal(${key}::text, ${payloadJson}::text::jsonb, ${signalId}::text)
      as result`;
  return result;
}
