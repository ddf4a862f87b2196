/**
 * Every SQL statement about schedules (migration 20261202000200): create, list, pause, resume,
 * delete, and the sweep that fires due ticks and stores the next due times.
 * The due times themselves are computed by the caller (croner, `src/dsl/schedule_times.ts`), which
 * this module does not import: `src/db/` imports nothing of `src/`.
 *
 * @module
 */

import { onlyRow } from "./only_row.ts";
import type { Queryable } from "./driver/postgres.ts";

/** A row of `sluice.schedules`. */
export interface ScheduleRow {
  readonly schedule_name: string;
  readonly target_kind: "flow" | "alias";
  readonly target: string;
  readonly input: unknown;
  readonly cron: string;
  readonly timezone: string;
  readonly missed: "run-once" | "skip";
  readonly next_due_at: Date | null;
  readonly following_due_at: Date | null;
  readonly advanced_at: Date;
  readonly paused_at: Date | null;
  readonly created_at: Date;
  readonly last_fired_at: Date | null;
  readonly last_run_id: string | null;
  readonly last_error: string | null;
}

/** A row of `sluice.schedule_ticks`. */
export interface ScheduleTickRow {
  readonly schedule_name: string;
  readonly due_at: Date;
  readonly fired_at: Date;
  readonly catch_up: boolean;
  readonly run_id: string | null;
  readonly error: string | null;
}

/** What `sluice.create_schedule` takes. */
export interface NewScheduleRow {
  readonly scheduleName: string;
  readonly targetKind: "flow" | "alias";
  readonly target: string;
  readonly inputJson: string;
  readonly cron: string;
  readonly timezone: string;
  readonly missed: "run-once" | "skip";
  readonly nextDueAt: Date;
  readonly followingDueAt: Date | null;
  readonly createdAt: Date;
}

/** `sluice.create_schedule`: the new row, or the database's error (e.g. 23505 for a taken name). */
export async function createScheduleRow(
  sql: Queryable,
  schedule: NewScheduleRow,
): Promise<ScheduleRow> {
  const rows = await sql<ScheduleRow[]>`
    select s.* from sluice.create_schedule(${schedule.scheduleName}, ${schedule.targetKind},
      ${schedule.target}, ${schedule.inputJson}::text::jsonb, ${schedule.cron},
      ${schedule.timezone}, ${schedule.missed}, ${schedule.nextDueAt.toISOString()}::timestamptz,
      ${schedule.followingDueAt?.toISOString() ?? null}::timestamptz,
      ${schedule.createdAt.toISOString()}::timestamptz) s`;
  return onlyRow("create_schedule", rows);
}

/** One schedule, or `null` when there is none of that name. */
export async function readSchedule(sql: Queryable, name: string): Promise<ScheduleRow | null> {
  const rows = await sql<ScheduleRow[]>`
    select s.* from sluice.schedules s where s.schedule_name = ${name}`;
  return rows[0] ?? null;
}

/** Every schedule, by name. */
export async function readSchedules(sql: Queryable): Promise<ScheduleRow[]> {
  return await sql<ScheduleRow[]>`
    select s.* from sluice.schedules s order by s.schedule_name collate "C"`;
}

/** A schedule's fired ticks, oldest first. */
export async function readScheduleTicks(
  sql: Queryable,
  name: string,
): Promise<ScheduleTickRow[]> {
  return await sql<ScheduleTickRow[]>`
    select t.* from sluice.schedule_ticks t where t.schedule_name = ${name} order by t.due_at`;
}

/** `sluice.pause_schedule`: whether it was running (P0002 for an unknown name). */
export async function pauseScheduleRow(sql: Queryable, name: string): Promise<boolean> {
  const rows = await sql<{ changed: boolean }[]>`
    select sluice.pause_schedule(${name}) as changed`;
  return onlyRow("pause_schedule", rows).changed;
}

/** `sluice.resume_schedule` with the next due times from `resumedAt`: whether it was paused. */
export async function resumeScheduleRow(
  sql: Queryable,
  name: string,
  due: { nextDueAt: Date; followingDueAt: Date | null; resumedAt: Date },
): Promise<boolean> {
  const rows = await sql<{ changed: boolean }[]>`
    select sluice.resume_schedule(${name}, ${due.nextDueAt.toISOString()}::timestamptz,
      ${due.followingDueAt?.toISOString() ?? null}::timestamptz,
      ${due.resumedAt.toISOString()}::timestamptz) as changed`;
  return onlyRow("resume_schedule", rows).changed;
}

/** `sluice.delete_schedule`: whether it existed. */
export async function deleteScheduleRow(sql: Queryable, name: string): Promise<boolean> {
  const rows = await sql<{ deleted: boolean }[]>`
    select sluice.delete_schedule(${name}) as deleted`;
  return onlyRow("delete_schedule", rows).deleted;
}

/** A schedule awaiting its next due time, as `sluice.fire_due_schedules` returns it. */
export interface AwaitingScheduleRow {
  readonly schedule_name: string;
  readonly cron: string;
  readonly timezone: string;
  /** The compare-and-set token, as exact text (a `Date` would drop the microseconds). */
  readonly advanced_at: string;
  /** The same time, to compute from. */
  readonly advanced_from: Date;
}

/**
 * The next due times of one schedule, or why none can be computed (its expression never fires
 * again, or no longer parses): `sluice.set_schedule_next_due` pauses such a schedule with the
 * problem as its last error.
 */
export type NextDue =
  | { readonly nextDueAt: Date; readonly followingDueAt: Date | null }
  | { readonly problem: string };

/** How long a sweep computes due times before it lets the event loop run (croner is synchronous). */
const COMPUTE_SLICE_MS = 10;

/** What {@linkcode sweepSchedules} did. */
export interface SweepResult {
  /** Ticks fired (runs started, or failed to start and recorded). */
  readonly fired: number;
  /** Schedules whose next due time was stored. */
  readonly advanced: number;
  /** Schedules paused because their next due time cannot be computed. */
  readonly paused: readonly PausedSchedule[];
}

/** A schedule a sweep paused, with its last error (`paused: ` and the problem). */
export interface PausedSchedule {
  readonly schedule_name: string;
  readonly last_error: string;
}

/**
 * One sweep, as two statements, each its own transaction: `sluice.fire_due_schedules(now)` fires
 * every due tick (the tick rows, the runs and the schedules' advance commit together) and answers
 * the schedules awaiting their next due time (at most 100); `nextDue` computes those, letting the
 * event loop run every 10 ms; then `sluice.set_schedule_next_due` stores them by compare-and-set
 * (and pauses the ones whose due time cannot be computed, with the problem as their last error). Not one `sql.begin`: postgres.js
 * 3.4.9 writes a transaction's `rollback` to its connection after the server closed it, which
 * throws from a timer and kills the process (seen on a `pg_ctl restart`), and a worker must survive
 * a restart. Nothing needs the two in one transaction: a tick is fired whole by the first, and a
 * sweep that stops between them leaves a schedule awaiting its next due time, which the next sweep
 * of any worker computes, exactly as after a firing by pg_cron.
 *
 * @param now The time to fire at; `undefined` for the database's clock.
 * @param traceparent The W3C trace context the runs fired record, or `null` for none.
 */
export async function sweepSchedules(
  sql: Queryable,
  now: Date | undefined,
  nextDue: (schedule: AwaitingScheduleRow) => NextDue,
  traceparent: string | null = null,
): Promise<SweepResult> {
  const at = now?.toISOString() ?? null;
  // With a trace context, the runs fired record it: the argument's subquery sets it (for this
  // statement's transaction) before fire_due_schedules runs.
  const awaiting = traceparent === null
    ? await sql<(AwaitingScheduleRow & { fired: boolean })[]>`
      select f.schedule_name, f.cron, f.timezone, f.advanced_at::text as advanced_at,
        f.advanced_at as advanced_from, f.fired
      from sluice.fire_due_schedules(coalesce(${at}::timestamptz, clock_timestamp())) f`
    : await sql<(AwaitingScheduleRow & { fired: boolean })[]>`
      select f.schedule_name, f.cron, f.timezone, f.advanced_at::text as advanced_at,
        f.advanced_at as advanced_from, f.fired
      from sluice.fire_due_schedules((
        select coalesce(${at}::timestamptz, clock_timestamp())
        from pg_catalog.set_config('sluice.traceparent', ${traceparent}, true)
      )) f`;
  const due = [];
  let sliceStart = performance.now();
  for (const schedule of awaiting) {
    // One due time takes croner a few milliseconds when the expression fires rarely or never:
    // the worker's handlers, heartbeats and LISTEN session share this event loop.
    if (performance.now() - sliceStart >= COMPUTE_SLICE_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      sliceStart = performance.now();
    }
    const next = nextDue(schedule);
    due.push(
      "problem" in next
        ? {
          schedule_name: schedule.schedule_name,
          advanced_at: schedule.advanced_at,
          problem: next.problem,
        }
        : {
          schedule_name: schedule.schedule_name,
          advanced_at: schedule.advanced_at,
          next_due_at: next.nextDueAt.toISOString(),
          following_due_at: next.followingDueAt?.toISOString() ?? null,
        },
    );
  }
  let stored = 0;
  let paused: PausedSchedule[] = [];
  if (due.length > 0) {
    const rows = await sql<{ stored: number }[]>`
      select sluice.set_schedule_next_due(${JSON.stringify(due)}::text::jsonb) as stored`;
    stored = onlyRow("set_schedule_next_due", rows).stored;
    const problems = due.flatMap((entry) => "problem" in entry ? [entry.schedule_name] : []);
    if (problems.length > 0) {
      // Which of them this sweep paused: a racing sweep may have stored or paused one first.
      paused = await sql<PausedSchedule[]>`
        select s.schedule_name, s.last_error from sluice.schedules s
        where s.schedule_name = any(${problems}::text[]) and s.paused_at is not null
          and s.advanced_at::text = any(${
        due.flatMap((entry) => "problem" in entry ? [entry.advanced_at] : [])
      }::text[])
          and s.last_error like 'paused: %'`;
    }
  }
  return {
    fired: awaiting.filter((schedule) => schedule.fired).length,
    advanced: stored - paused.length,
    paused,
  };
}
