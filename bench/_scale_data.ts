/**
 * Builds the large tables of `bench:scale` with set-based SQL, in chunks that each print a
 * progress line: completed runs retained as history, queued tasks as a backlog. The rows are what
 * the SQL core itself would have left (runs, step states, tasks, messages, archived messages),
 * written directly because producing a million runs through the hot path would take hours here.
 *
 * @module
 */
import type { Sql } from "postgres";

/** Rows per statement while building: each chunk is one transaction and one progress line. */
const CHUNK = 100_000;

async function inChunks(
  count: number,
  what: string,
  log: (message: string) => void,
  build: (chunk: number) => Promise<unknown>,
): Promise<void> {
  const startedAt = performance.now();
  for (let done = 0; done < count;) {
    const chunk = Math.min(CHUNK, count - done);
    await build(chunk);
    done += chunk;
    const seconds = (performance.now() - startedAt) / 1000;
    log(
      `  ${what}: ${done.toLocaleString("en-US")} / ${count.toLocaleString("en-US")} ` +
        `(${seconds.toFixed(1)} s)`,
    );
  }
}

/**
 * Adds `count` completed runs of the 3-step flow `flowSlug` (plain queue named after it) that
 * finished `ageDays` ago: per run 3 completed step states, 3 completed tasks and their 3 archived
 * messages in `pgmq.a_<queue>`.
 */
export async function buildHistory(
  sql: Sql,
  flowSlug: string,
  count: number,
  ageDays: number,
  log: (message: string) => void,
): Promise<void> {
  const queue = flowSlug.toLowerCase();
  const archive = `pgmq.a_${queue}`;
  const sequence = `pgmq.q_${queue}`;
  await inChunks(count, `history runs of ${flowSlug}`, log, (chunk) =>
    sql.unsafe(
      `
      with r as (
        insert into sluice.runs (flow_slug, started_via, status, input, output, remaining_steps,
          started_at, completed_at)
        select $1, $1, 'completed', jsonb_build_object('n', i), '{"c": {"ok": true}}', 0,
          at - interval '1 second', at
        from generate_series(1, $2::integer) as i,
          lateral (select now() - make_interval(days => $3) - i * interval '1 ms' as at) t
        returning run_id, started_at, completed_at
      ), ss as (
        insert into sluice.step_states (run_id, step_slug, flow_slug, status, remaining_deps,
          initial_tasks, remaining_tasks, output, created_at, started_at, completed_at)
        select r.run_id, s.step_slug, s.flow_slug, 'completed', 0, 1, 0, '{"ok": true}',
          r.started_at, r.started_at, r.completed_at
        from r cross join sluice.steps s
        where s.flow_slug = $1
        returning run_id, step_slug, flow_slug, started_at, completed_at
      ), t as (
        insert into sluice.step_tasks (run_id, step_slug, task_index, flow_slug, queue_name,
          message_id, status, attempts_count, output, queued_at, started_at, completed_at)
        select ss.run_id, ss.step_slug, 0, ss.flow_slug, $4,
          nextval(pg_get_serial_sequence($5, 'msg_id')), 'completed', 1, '{"ok": true}',
          ss.started_at, ss.started_at, ss.completed_at
        from ss
        returning run_id, step_slug, task_index, flow_slug, message_id, queued_at, completed_at
      )
      insert into ${archive} (msg_id, read_ct, enqueued_at, archived_at, vt, message)
      select t.message_id, 1, t.queued_at, t.completed_at, t.completed_at,
        jsonb_build_object('flow_slug', t.flow_slug, 'run_id', t.run_id,
          'step_slug', t.step_slug, 'task_index', t.task_index)
      from t
      `,
      [flowSlug, chunk, ageDays, queue, sequence],
    ));
}

/**
 * Adds `count` started runs of the step-queued flow `flowSlug` (root steps `slow` and `fast`)
 * whose `fast` step already completed and whose `slow` task is queued, with its message visible
 * on `<flow>__slow`: a backlog of `count` tasks on that queue.
 */
export async function buildBacklog(
  sql: Sql,
  flowSlug: string,
  count: number,
  log: (message: string) => void,
): Promise<void> {
  const queue = `${flowSlug}__slow`.toLowerCase();
  await inChunks(count, `backlog tasks on ${queue}`, log, (chunk) =>
    sql.unsafe(
      `
      with ids as materialized (
        select gen_random_uuid() as run_id, i from generate_series(1, $2::integer) as i
      ), r as (
        insert into sluice.runs (run_id, flow_slug, started_via, input, remaining_steps)
        select ids.run_id, $1, $1, '{}', 1 from ids
        returning run_id
      ), ss as (
        insert into sluice.step_states (run_id, step_slug, flow_slug, status, remaining_deps,
          initial_tasks, remaining_tasks, output, started_at, completed_at)
        select ids.run_id, s.slug, $1, s.status, 0, 1, case when s.slug = 'slow' then 1 else 0 end,
          case when s.slug = 'fast' then '{"ok": true}'::jsonb end, now(),
          case when s.slug = 'fast' then now() end
        from ids cross join (values ('slow', 'started'), ('fast', 'completed')) as s(slug, status)
        returning run_id
      ), m as (
        insert into pgmq.q_${queue} (vt, message)
        select now(), jsonb_build_object('flow_slug', $1, 'run_id', ids.run_id,
          'step_slug', 'slow', 'task_index', 0)
        from ids
        order by ids.i
        returning msg_id, message
      )
      insert into sluice.step_tasks (run_id, step_slug, task_index, flow_slug, queue_name,
        message_id)
      select (m.message ->> 'run_id')::uuid, 'slow', 0, $1, $3, m.msg_id from m
      `,
      [flowSlug, chunk, queue],
    ));
}
