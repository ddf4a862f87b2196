/**
 * The chaos benchmark's audit: what the engine's tables and the handlers' execution log say
 * about the run. Every query reads the audited flows only (`chaos`, and the subflow shape's
 * `chaos_sub` and `chaos_child`). The definitions are in bench/README.md.
 *
 * @module
 */
import type { Sql } from "postgres";
import {
  AUDITED_FLOWS,
  CHILD_FLOW,
  MAX_ATTEMPTS,
  STALL_WINDOW_SECONDS,
  SUBFLOW_FAN_OUT,
  SUBFLOW_FLOW,
} from "./_chaos_flow.ts";

/**
 * Seconds past the stall window after which a `started` task counts as stuck: recovery runs about
 * once a second on every live worker's heartbeat; the rest is slack for a loaded machine.
 */
export const RECOVERY_SLACK_SECONDS = 10;

/**
 * A task stays live for overlap purposes only this long after it started: by then recovery may
 * rightly give it to another worker. One second short of the stall window, because the window
 * counts from the claim, a moment before the handler starts.
 */
const LIVE_SECONDS = STALL_WINDOW_SECONDS - 1;

/** Runs of the audited flows by status (subflow children included). */
export interface RunCounts {
  completed: number;
  failed: number;
  cancelled: number;
  started: number;
}

/** The audit's findings. */
export interface Audit {
  /** Tasks `queued` or `started` whose message is gone from the queue. */
  lost: number;
  /** Completed tasks whose output is not a recorded success of their final attempt, described. */
  notBacked: string[];
  /** Pairs of executions of one task that overlapped while both were live, described. */
  overlapping: string[];
  /** Tasks claimed, or seen by a handler, more than `MAX_ATTEMPTS` times. */
  aboveMaxAttempts: number;
  /** Executions recorded. */
  executions: number;
}

/** Counts the runs by status. */
export async function runCounts(sql: Sql): Promise<RunCounts> {
  const [counts] = await sql<RunCounts[]>`
    select count(*) filter (where status = 'completed')::int as completed,
      count(*) filter (where status = 'failed')::int as failed,
      count(*) filter (where status = 'cancelled')::int as cancelled,
      count(*) filter (where status = 'started')::int as started
    from sluice.runs where flow_slug = any (${[...AUDITED_FLOWS]}::text[])`;
  return counts;
}

/** Keys (`run/step/index`) of tasks `started` longer than the stall window plus the slack. */
export async function stuckTasks(sql: Sql): Promise<string[]> {
  const rows = await sql<{ key: string }[]>`
    select concat_ws('/', run_id, step_slug, task_index) as key
    from sluice.step_tasks
    where flow_slug = any (${[...AUDITED_FLOWS]}::text[]) and status = 'started'
      and started_at < now() - make_interval(secs => ${
    STALL_WINDOW_SECONDS + RECOVERY_SLACK_SECONDS
  })`;
  return rows.map((row) => row.key);
}

/** `pg_stat_database.deadlocks` of the current database. */
export async function deadlocks(sql: Sql): Promise<number> {
  const [{ count }] = await sql<{ count: number }[]>`
    select deadlocks::int as count from pg_stat_database where datname = current_database()`;
  return count;
}

/**
 * When the first task completed in a transaction that began after the server last started, or
 * `undefined`.
 */
export async function firstCompletionSinceStart(sql: Sql): Promise<Date | undefined> {
  const [{ at }] = await sql<{ at: Date | null }[]>`
    select min(completed_at) as at from sluice.step_tasks
    where flow_slug = 'chaos' and completed_at >= pg_postmaster_start_time()`;
  return at ?? undefined;
}

/** Audits the finished benchmark (after the fleet wrote `chaos.workers`). */
export async function audit(sql: Sql): Promise<Audit> {
  const [counts] = await sql<{ lost: number; aboveMaxAttempts: number; executions: number }[]>`
    select
      (select count(*)::int from sluice.step_tasks t
        where t.flow_slug = any (${[
    ...AUDITED_FLOWS,
  ]}::text[]) and t.status in ('queued', 'started')
          -- Each flow has a queue of its own name; message ids are per queue.
          and not exists (
            select 1 from (
              select 'chaos' as queue, msg_id from pgmq.q_chaos
              union all select ${SUBFLOW_FLOW}, msg_id from pgmq.q_chaos_sub
              union all select ${CHILD_FLOW}, msg_id from pgmq.q_chaos_child
            ) q where q.queue = t.queue_name and q.msg_id = t.message_id)
      ) as lost,
      (select count(*)::int from sluice.step_tasks t
        -- Each retry round of a run gives its requeued tasks maxAttempts more from attempts_base.
        where t.flow_slug = any (${[
    ...AUDITED_FLOWS,
  ]}::text[]) and (t.attempts_count > t.attempts_base + ${MAX_ATTEMPTS}
          or exists (
            select 1 from chaos.executions e
            where (e.run_id, e.step_slug, e.task_index) = (t.run_id, t.step_slug, t.task_index)
              and e.attempt > t.attempts_base + ${MAX_ATTEMPTS}))
      ) as "aboveMaxAttempts",
      (select count(*)::int from chaos.executions) as executions`;
  const notBacked = await sql<{ line: string }[]>`
    select format('%s %s[%s]: completed at attempt %s with the output of execution %s (%s)',
      t.run_id, t.step_slug, t.task_index, t.attempts_count, t.output ->> 'execution',
      coalesce(format('attempt %s on %s, %s', e.attempt, e.worker, e.outcome), 'not recorded')
    ) as line
    from sluice.step_tasks t
    left join chaos.executions e on e.id = (t.output ->> 'execution')::uuid
      and (e.run_id, e.step_slug, e.task_index) = (t.run_id, t.step_slug, t.task_index)
    where t.flow_slug = any (${[...AUDITED_FLOWS]}::text[]) and t.status = 'completed'
      and (e.id is null or e.outcome <> 'succeeded' or e.attempt <> t.attempts_count)
    order by t.completed_at`;
  const overlapping = await sql<{ line: string }[]>`
    with lived as (
      -- An execution cut short by a kill ends when its worker was killed.
      select e.*, coalesce(e.ended_at, w.stopped_at) as end_at
      from chaos.executions e join chaos.workers w on w.name = e.worker
    )
    select format('%s %s[%s]: attempt %s on %s (%s .. %s) and attempt %s on %s (%s .. %s)',
      a.run_id, a.step_slug, a.task_index, a.attempt, a.worker, a.started_at::time, a.end_at::time,
      b.attempt, b.worker, b.started_at::time, b.end_at::time) as line
    from lived a
    join lived b on (b.run_id, b.step_slug, b.task_index) = (a.run_id, a.step_slug, a.task_index)
      and (b.started_at, b.id) > (a.started_at, a.id)
    -- A lower attempt that starts after a higher one sat on its claim past the stall window:
    -- the engine had already given the task away.
    where b.attempt >= a.attempt
      and b.started_at < least(a.end_at, a.started_at + make_interval(secs => ${LIVE_SECONDS}))
      -- A cancel fences the attempts it finds; one still running until its worker's next
      -- heartbeat aborts it may meet the attempt of a retry. Claims after a cancel are audited by
      -- run control (bench/_chaos_control.ts) instead.
      and not exists (select 1 from chaos.transitions k
        where k.run_id = a.run_id and k.status = 'cancelled')
    order by a.started_at`;
  return {
    ...counts,
    notBacked: notBacked.map((row) => row.line),
    overlapping: overlapping.map((row) => row.line),
  };
}

/** Executions of `worker` in progress at `at` (started before, not ended before). */
export async function executionsInFlight(sql: Sql, worker: string, at: Date): Promise<number> {
  const [{ count }] = await sql<{ count: number }[]>`
    select count(*)::int as count
    from chaos.executions e join chaos.workers w on w.name = e.worker
    where e.worker = ${worker} and e.started_at < ${at}
      and coalesce(e.ended_at, w.stopped_at) > ${at}`;
  return count;
}

/**
 * Whether a task that `worker` had in flight at `at` runs again, as a later attempt that began
 * once the first one had outlived its stall window (so recovery handed it out): the moment to wake
 * a frozen worker, so that its late reports meet a live attempt.
 */
export async function reclaimedAndRunning(sql: Sql, worker: string, at: Date): Promise<boolean> {
  const [{ found }] = await sql<{ found: boolean }[]>`
    select exists (
      select 1 from chaos.executions a
      join chaos.executions b using (run_id, step_slug, task_index)
      where a.worker = ${worker} and a.started_at < ${at} and a.ended_at is null
        and b.attempt > a.attempt and b.ended_at is null
        and b.started_at >= a.started_at + make_interval(secs => ${LIVE_SECONDS})
    ) as found`;
  return found;
}

/** Why runs failed: their error messages with ids and numbers blanked out, most frequent first. */
export async function failureCauses(sql: Sql): Promise<string[]> {
  const rows = await sql<{ line: string }[]>`
    select format('%s × %s', count(*), cause) as line
    from (
      select left(regexp_replace(split_part(error_message, E'\n', 1),
        '[0-9a-f]{8}-[0-9a-f-]{27}|[0-9]+', '#', 'g'), 160) as cause
      from sluice.runs where flow_slug = any (${[...AUDITED_FLOWS]}::text[]) and status = 'failed'
    ) r
    group by cause order by count(*) desc`;
  return rows.map((row) => row.line);
}

/** The subflow shape's findings (`chaos_sub` runs and their `chaos_child` children). */
export interface SubflowAudit {
  /** Runs of `chaos_sub` started. */
  parents: number;
  /** Child runs started. */
  children: number;
  /** (parent run, step, index) with more than one child run. */
  duplicateChildren: string[];
  /**
   * Parents with a child missing or misplaced: a subflow step that waits, completed or failed
   * without exactly one child per element (0 .. SUBFLOW_FAN_OUT - 1), or has children before it
   * started.
   */
  missingChildren: string[];
  /** Subflow steps still waiting with no live child: nothing would ever end them. */
  waitingWithoutLiveChild: string[];
  /** Live children of a parent that ended. */
  liveChildOfEndedParent: string[];
  /** Completed subflow steps whose output is not their children's outputs in index order. */
  outputsOutOfOrder: string[];
}

/** Audits the subflow shape. */
export async function subflowAudit(sql: Sql): Promise<SubflowAudit> {
  const [counts] = await sql<{ parents: number; children: number }[]>`
    select (select count(*)::int from sluice.runs where flow_slug = ${SUBFLOW_FLOW}) as parents,
      (select count(*)::int from sluice.runs where parent_run_id is not null) as children`;
  const duplicates = await sql<{ key: string }[]>`
    select concat_ws('/', parent_run_id, parent_step_slug, parent_task_index) || ' × ' || count(*)
      as key
    from sluice.runs where parent_run_id is not null
    group by parent_run_id, parent_step_slug, parent_task_index having count(*) > 1`;
  const missing = await sql<{ key: string }[]>`
    select format('%s kids %s with %s children (indexes %s)', p.run_id, ss.status, k.n,
      coalesce(k.indexes, '{}')) as key
    from sluice.runs p
    join sluice.step_states ss on ss.run_id = p.run_id and ss.step_slug = 'kids'
    cross join lateral (
      select count(*)::int as n,
        array_agg(c.parent_task_index order by c.parent_task_index)::text as indexes,
        count(*) filter (where c.parent_task_index between 0 and ${SUBFLOW_FAN_OUT - 1}
          and c.flow_slug = ${CHILD_FLOW})::int as placed
      from sluice.runs c where c.parent_run_id = p.run_id
    ) k
    where p.flow_slug = ${SUBFLOW_FLOW}
      and (k.n not in (0, ${SUBFLOW_FAN_OUT}) or k.placed <> k.n
        or (ss.status in ('waiting', 'completed', 'failed') and k.n <> ${SUBFLOW_FAN_OUT})
        or (ss.status = 'created' and k.n <> 0))`;
  const waiting = await sql<{ key: string }[]>`
    select ss.run_id::text as key from sluice.step_states ss
    where ss.flow_slug = ${SUBFLOW_FLOW} and ss.step_slug = 'kids' and ss.status = 'waiting'
      and not exists (select 1 from sluice.runs c
        where c.parent_run_id = ss.run_id and c.status = 'started')`;
  const orphans = await sql<{ key: string }[]>`
    select format('%s (parent %s %s)', c.run_id, p.run_id, p.status) as key
    from sluice.runs c join sluice.runs p on p.run_id = c.parent_run_id
    where c.status = 'started' and p.status <> 'started'`;
  const disordered = await sql<{ key: string }[]>`
    select ss.run_id::text as key from sluice.step_states ss
    where ss.flow_slug = ${SUBFLOW_FLOW} and ss.step_slug = 'kids' and ss.status = 'completed'
      and ss.output is distinct from (
        select jsonb_agg(c.output order by c.parent_task_index) from sluice.runs c
        where c.parent_run_id = ss.run_id)`;
  return {
    ...counts,
    duplicateChildren: duplicates.map((row) => row.key),
    missingChildren: missing.map((row) => row.key),
    waitingWithoutLiveChild: waiting.map((row) => row.key),
    liveChildOfEndedParent: orphans.map((row) => row.key),
    outputsOutOfOrder: disordered.map((row) => row.key),
  };
}
