/**
 * The chaos benchmark's concurrency limit (docs/flow_control.md#concurrency-limits): the `chaos`
 * flow's map step holds at most {@linkcode CONCURRENCY_LIMIT} slots per key, its runs spread over
 * {@linkcode CONCURRENCY_KEYS} keys given at start, and the audit checks from SQL that no key ever
 * held more (sampled while the faults run) and that no task stays held once its run has ended.
 *
 * @module
 */
import type postgres from "postgres";

/** Slots per key of the `chaos` flow's `each` step. */
export const CONCURRENCY_LIMIT = 4;

/** Keys the `chaos` runs are spread over (`startFlow(..., { concurrencyKey })`). */
export const CONCURRENCY_KEYS = 5;

/** The concurrency key of the `n`-th run started. */
export function concurrencyKeyOf(n: number): string {
  return `key${n % CONCURRENCY_KEYS}`;
}

/**
 * The most slots any key of the `each` step holds right now: its tasks that have a message and
 * are queued or started, as `sluice.release_held_tasks` counts them.
 */
export async function mostSlotsInUse(sql: postgres.Sql): Promise<number> {
  const [{ most }] = await sql<{ most: number }[]>`
    select coalesce(max(n), 0)::int as most from (
      select count(*) as n from sluice.step_tasks
      where flow_slug = 'chaos' and step_slug = 'each' and concurrency_key is not null
        and message_id is not null and status in ('queued', 'started')
      group by concurrency_key
    ) slots`;
  return most;
}

/** Tasks still held (queued with no message) although their run has ended: leaked waiters. */
export async function heldTasksOfEndedRuns(sql: postgres.Sql): Promise<number> {
  const [{ held }] = await sql<{ held: number }[]>`
    select count(*)::int as held from sluice.step_tasks t
    join sluice.runs r on r.run_id = t.run_id
    where t.concurrency_key is not null and t.message_id is null and t.status = 'queued'
      and r.status <> 'started'`;
  return held;
}
