/**
 * Schedules: start a flow on a cron schedule (`schedule`), read, pause, resume and delete them,
 * and fire due ticks (`fireDueSchedules`, what every worker's heartbeat does). Each tick starts
 * exactly one run, whoever fires it and however often; docs/schedules.md.
 *
 * @module
 */

import { isDeepStrictEqual } from "node:util";
import {
  createScheduleRow,
  deleteScheduleRow,
  pauseScheduleRow,
  readSchedule,
  readSchedules,
  readScheduleTicks,
  resumeScheduleRow,
  type ScheduleRow,
  type ScheduleTickRow,
  sweepSchedules,
} from "../db/schedule_queries.ts";
import type { Queryable } from "../db/driver/postgres.ts";
import type { Json } from "../dsl/json.ts";
import { DEFAULT_MAX_JSON_BYTES, toJsonText } from "../dsl/json_text.ts";
import { startRefOf } from "../dsl/routing.ts";
import { nextDueOrProblem } from "../dsl/next_due.ts";
import { validateSchedule } from "../dsl/schedule_times.ts";
import { slugProblem } from "../dsl/slug.ts";
import type { DeployableFlow, FlowInput } from "../dsl/types.ts";
import { FlowNotFoundError } from "./errors.ts";
import { ScheduleExistsError, ScheduleNotFoundError } from "./schedule_errors.ts";
import { context } from "../telemetry/otel_api.ts";
import { traceparentOf } from "../telemetry/trace_context.ts";

/**
 * What a schedule does with ticks it missed because nothing fired them in time (every worker
 * down for an hour): `run-once` starts one catch-up run, `skip` starts none. A tick is missed when
 * the tick after it is due too; a tick fired late but before its successor runs normally.
 *
 * @example Usage
 * ```ts
 * import type { MissedTickPolicy } from "@sluice/sluice/admin";
 *
 * const policy: MissedTickPolicy = "skip";
 * ```
 */
export type MissedTickPolicy = "run-once" | "skip";

/**
 * Options of {@linkcode schedule}.
 *
 * @example Usage
 * ```ts
 * import type { ScheduleOptions } from "@sluice/sluice/admin";
 *
 * const options: ScheduleOptions<{ day: string }> = {
 *   cron: "0 3 * * *",
 *   input: { day: "today" },
 *   timezone: "Europe/Berlin",
 *   missed: "skip",
 * };
 * ```
 */
export interface ScheduleOptions<Input = Json> {
  /**
   * The cron expression, read by croner: 5 fields (`minute hour day month weekday`), or 6 with
   * seconds first; e.g. `"0 3 * * *"` for 03:00 every day.
   */
  readonly cron: string;
  /** The input of every run the schedule starts. */
  readonly input: Input;
  /**
   * The IANA time zone the cron fields are read in.
   *
   * @default {"UTC"}
   */
  readonly timezone?: string;
  /**
   * What to do with missed ticks ({@linkcode MissedTickPolicy}).
   *
   * @default {"run-once"}
   */
  readonly missed?: MissedTickPolicy;
  /**
   * The schedule's name (a slug), for pausing, resuming and deleting it.
   *
   * @default {the flow's slug, or the alias}
   */
  readonly name?: string;
  /**
   * The time the schedule starts from: its first tick is the first one after it. Tests give a
   * time of their own together with {@linkcode FireDueSchedulesOptions.now}.
   *
   * @default {the current time}
   */
  readonly now?: Date;
}

/**
 * A schedule as stored in `sluice.schedules`.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { getSchedule, type Schedule } from "@sluice/sluice/admin";
 *
 * const schedule: Schedule | null = await getSchedule(connect(Deno.env.get("DATABASE_URL")!), "nightly");
 * console.log(schedule?.nextDueAt);
 * ```
 */
export interface Schedule {
  /** Its name. */
  readonly name: string;
  /** `flow`: it starts the concrete flow `target`; `alias`: it starts the alias's current flow. */
  readonly targetKind: "flow" | "alias";
  /** The concrete flow slug or the alias. */
  readonly target: string;
  /** The input of every run. */
  readonly input: Json;
  /** The cron expression. */
  readonly cron: string;
  /** The IANA time zone of the cron fields. */
  readonly timezone: string;
  /** The missed-tick policy. */
  readonly missed: MissedTickPolicy;
  /**
   * The next tick, or `null` while a worker has yet to compute it (for a moment after each tick;
   * longer only while no worker runs).
   */
  readonly nextDueAt: Date | null;
  /** When it was paused, or `null` while it runs. */
  readonly pausedAt: Date | null;
  /** When it was created. */
  readonly createdAt: Date;
  /** When its last tick fired. */
  readonly lastFiredAt: Date | null;
  /** The run its last tick started. */
  readonly lastRunId: string | null;
  /** Why its last tick could not start a run (e.g. the flow was deleted), else `null`. */
  readonly lastError: string | null;
}

/**
 * One fired tick of a schedule.
 *
 * @example Usage
 * ```ts
 * import type { ScheduleTick } from "@sluice/sluice/admin";
 *
 * const tick: ScheduleTick = {
 *   scheduleName: "nightly",
 *   dueAt: new Date("2026-01-01T03:00:00Z"),
 *   firedAt: new Date("2026-01-01T03:00:01Z"),
 *   catchUp: false,
 *   runId: "0b8c3a57-5d5c-4c39-9a2e-2f7b8f3f1e44",
 *   error: null,
 * };
 * ```
 */
export interface ScheduleTick {
  /** The schedule. */
  readonly scheduleName: string;
  /** The tick's time: with the schedule, its identity (one run per tick). */
  readonly dueAt: Date;
  /** When it fired. */
  readonly firedAt: Date;
  /** Whether it fired as the one catch-up run for missed ticks. */
  readonly catchUp: boolean;
  /** The run it started, or `null` when the run could not start. */
  readonly runId: string | null;
  /** Why the run could not start, else `null`. */
  readonly error: string | null;
}

function toSchedule(row: ScheduleRow): Schedule {
  return {
    name: row.schedule_name,
    targetKind: row.target_kind,
    target: row.target,
    input: row.input as Json,
    cron: row.cron,
    timezone: row.timezone,
    missed: row.missed,
    nextDueAt: row.next_due_at,
    pausedAt: row.paused_at,
    createdAt: row.created_at,
    lastFiredAt: row.last_fired_at,
    lastRunId: row.last_run_id,
    lastError: row.last_error,
  };
}

function toTick(row: ScheduleTickRow): ScheduleTick {
  return {
    scheduleName: row.schedule_name,
    dueAt: row.due_at,
    firedAt: row.fired_at,
    catchUp: row.catch_up,
    runId: row.run_id,
    error: row.error,
  };
}

/**
 * Schedules runs of a concrete flow (every tick starts exactly that version) or of a deployed
 * flow's alias (every tick starts the version the alias points at then, so the schedule follows
 * version switches). Validates the cron expression and time zone before writing anything. Calling
 * it again with the same name and the same settings returns the existing schedule unchanged, so an
 * application may declare its schedules at every start.
 *
 * @param sql A client, or a transaction's client.
 * @param flow The flow object (concrete), a deployed flow (its alias) or an alias name.
 * @param options The cron expression, input, time zone, missed-tick policy and name.
 * @returns The schedule.
 * @throws {InvalidCronError} When the cron expression does not parse or never fires.
 * @throws {InvalidTimezoneError} When the time zone is not an IANA name.
 * @throws {ScheduleExistsError} When a schedule of that name exists with other settings.
 * @throws {FlowNotFoundError} When no such flow (or alias) is compiled yet.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow } from "@sluice/sluice";
 * import { schedule } from "@sluice/sluice/admin";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const report = new Flow<{ kind: string }>({ slug: "report" }).step({ slug: "build" }, () => 1);
 * await schedule(sql, report, { cron: "0 3 * * *", input: { kind: "daily" }, timezone: "Europe/Berlin" });
 * ```
 */
export function schedule<F extends DeployableFlow>(
  sql: Queryable,
  flow: F,
  options: ScheduleOptions<FlowInput<F>>,
): Promise<Schedule>;
/**
 * Schedules runs through an alias (or a flow's own name), resolved at each tick.
 *
 * @param sql A client, or a transaction's client.
 * @param alias The alias.
 * @param options The cron expression, input, time zone, missed-tick policy and name.
 * @returns The schedule.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { schedule } from "@sluice/sluice/admin";
 *
 * await schedule(connect(Deno.env.get("DATABASE_URL")!), "orders", { cron: "*\/5 * * * *", input: {} });
 * ```
 */
export function schedule(
  sql: Queryable,
  alias: string,
  options: ScheduleOptions<Json>,
): Promise<Schedule>;
export async function schedule(
  sql: Queryable,
  flow: DeployableFlow | string,
  options: ScheduleOptions<unknown>,
): Promise<Schedule> {
  return await createSchedule(sql, startRefOf(flow), options);
}

/**
 * Schedules runs of the concrete flow `flowSlug`, never through an alias (what `schedule()` does
 * with a flow object): for callers that have the slug but not the flow, such as the ops CLI.
 *
 * @param sql A client, or a transaction's client.
 * @param flowSlug The concrete flow's slug.
 * @param options The cron expression, input, time zone, missed-tick policy and name.
 * @returns The schedule.
 * @throws {InvalidCronError} When the cron expression does not parse or never fires.
 * @throws {InvalidTimezoneError} When the time zone is not an IANA name.
 * @throws {ScheduleExistsError} When a schedule of that name exists with other settings.
 * @throws {FlowNotFoundError} When no such flow is compiled yet.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { scheduleFlowVersion } from "@sluice/sluice/admin";
 *
 * await scheduleFlowVersion(connect(Deno.env.get("DATABASE_URL")!), "orders_v2", {
 *   cron: "0 * * * *",
 *   input: {},
 * });
 * ```
 */
export async function scheduleFlowVersion(
  sql: Queryable,
  flowSlug: string,
  options: ScheduleOptions<Json>,
): Promise<Schedule> {
  return await createSchedule(sql, { ref: flowSlug, concrete: true }, options);
}

async function createSchedule(
  sql: Queryable,
  { ref, concrete }: { readonly ref: string; readonly concrete: boolean },
  options: ScheduleOptions<unknown>,
): Promise<Schedule> {
  const name = options.name ?? ref;
  const action = `Cannot schedule ${JSON.stringify(ref)} as ${JSON.stringify(name)}`;
  const problem = slugProblem(name);
  if (problem !== undefined) {
    throw new TypeError(`${action}: the schedule name is not a valid slug: ${problem}`);
  }
  const missed = options.missed ?? "run-once";
  if (missed !== "run-once" && missed !== "skip") {
    throw new TypeError(
      `${action}: missed must be "run-once" or "skip", got ${JSON.stringify(missed)}`,
    );
  }
  const timezone = options.timezone ?? "UTC";
  const createdAt = options.now ?? new Date();
  const due = validateSchedule(options.cron, timezone, createdAt);
  const inputJson = toJsonText(options.input, {
    action,
    root: "input",
    maxBytes: DEFAULT_MAX_JSON_BYTES,
  });
  const settings = {
    targetKind: concrete ? "flow" as const : "alias" as const,
    target: ref,
    input: JSON.parse(inputJson) as Json,
    cron: options.cron,
    timezone,
    missed,
  };
  const existing = await readSchedule(sql, name);
  if (existing !== null) return sameOrThrow(toSchedule(existing), settings);
  try {
    return toSchedule(
      await createScheduleRow(sql, {
        scheduleName: name,
        ...settings,
        inputJson,
        nextDueAt: due.nextDueAt,
        followingDueAt: due.followingDueAt,
        createdAt,
      }),
    );
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "P0002") throw new FlowNotFoundError(ref, !concrete, { cause: error });
    if (code === "23505") {
      // Created concurrently since the read: the same answer as if it had been there before.
      const raced = await readSchedule(sql, name);
      if (raced !== null) return sameOrThrow(toSchedule(raced), settings);
    }
    throw error;
  }
}

function sameOrThrow(
  existing: Schedule,
  wanted: Pick<Schedule, "targetKind" | "target" | "input" | "cron" | "timezone" | "missed">,
): Schedule {
  const differences = (Object.keys(wanted) as (keyof typeof wanted)[])
    .filter((key) => !isDeepStrictEqual(existing[key], wanted[key]))
    .map((key) =>
      `${key}: ${JSON.stringify(existing[key])} (stored) vs ${JSON.stringify(wanted[key])}`
    );
  if (differences.length > 0) throw new ScheduleExistsError(existing.name, differences);
  return existing;
}

/**
 * One schedule by name, or `null`.
 *
 * @param sql A client.
 * @param name The schedule's name.
 * @returns The schedule, or `null` when there is none of that name.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { getSchedule } from "@sluice/sluice/admin";
 *
 * console.log(await getSchedule(connect(Deno.env.get("DATABASE_URL")!), "nightly"));
 * ```
 */
export async function getSchedule(sql: Queryable, name: string): Promise<Schedule | null> {
  const row = await readSchedule(sql, name);
  return row === null ? null : toSchedule(row);
}

/**
 * Every schedule, by name.
 *
 * @param sql A client.
 * @returns The schedules.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { listSchedules } from "@sluice/sluice/admin";
 *
 * for (const s of await listSchedules(connect(Deno.env.get("DATABASE_URL")!))) console.log(s.name);
 * ```
 */
export async function listSchedules(sql: Queryable): Promise<Schedule[]> {
  return (await readSchedules(sql)).map(toSchedule);
}

/**
 * The fired ticks of a schedule, oldest first: which run each tick started.
 *
 * @param sql A client.
 * @param name The schedule's name.
 * @returns The ticks (none for an unknown name).
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { getScheduleTicks } from "@sluice/sluice/admin";
 *
 * console.log(await getScheduleTicks(connect(Deno.env.get("DATABASE_URL")!), "nightly"));
 * ```
 */
export async function getScheduleTicks(sql: Queryable, name: string): Promise<ScheduleTick[]> {
  return (await readScheduleTicks(sql, name)).map(toTick);
}

function notFound(error: unknown, name: string): unknown {
  const code = (error as { code?: unknown }).code;
  return code === "P0002" ? new ScheduleNotFoundError(name, { cause: error }) : error;
}

/**
 * Pauses a schedule: no tick fires until it is resumed.
 *
 * @param sql A client.
 * @param name The schedule's name.
 * @returns Whether it was running (`false`: it was paused already; nothing changed).
 * @throws {ScheduleNotFoundError} When there is no schedule of that name.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { pauseSchedule } from "@sluice/sluice/admin";
 *
 * await pauseSchedule(connect(Deno.env.get("DATABASE_URL")!), "nightly");
 * ```
 */
export async function pauseSchedule(sql: Queryable, name: string): Promise<boolean> {
  try {
    return await pauseScheduleRow(sql, name);
  } catch (error) {
    throw notFound(error, name);
  }
}

/**
 * Resumes a paused schedule. Its next tick is the first one after the resumption: ticks that fell
 * in the pause are not made up.
 *
 * @param sql A client.
 * @param name The schedule's name.
 * @param options `now`: the time of the resumption (tests).
 * @returns Whether it was paused (`false`: it was running; nothing changed).
 * @throws {ScheduleNotFoundError} When there is no schedule of that name.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { resumeSchedule } from "@sluice/sluice/admin";
 *
 * await resumeSchedule(connect(Deno.env.get("DATABASE_URL")!), "nightly");
 * ```
 */
export async function resumeSchedule(
  sql: Queryable,
  name: string,
  options: { readonly now?: Date } = {},
): Promise<boolean> {
  const row = await readSchedule(sql, name);
  if (row === null) throw new ScheduleNotFoundError(name);
  const resumedAt = options.now ?? new Date();
  const due = validateSchedule(row.cron, row.timezone, resumedAt);
  try {
    return await resumeScheduleRow(sql, name, { ...due, resumedAt });
  } catch (error) {
    throw notFound(error, name);
  }
}

/**
 * Deletes a schedule and its tick history; runs it started stay.
 *
 * @param sql A client.
 * @param name The schedule's name.
 * @returns Whether it existed.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { deleteSchedule } from "@sluice/sluice/admin";
 *
 * await deleteSchedule(connect(Deno.env.get("DATABASE_URL")!), "nightly");
 * ```
 */
export async function deleteSchedule(sql: Queryable, name: string): Promise<boolean> {
  return await deleteScheduleRow(sql, name);
}

/**
 * Options of {@linkcode fireDueSchedules}.
 *
 * @example Usage
 * ```ts
 * import type { FireDueSchedulesOptions } from "@sluice/sluice/admin";
 *
 * const options: FireDueSchedulesOptions = { now: new Date("2026-01-01T03:00:00Z") };
 * ```
 */
export interface FireDueSchedulesOptions {
  /**
   * The time to fire at: every tick due by then fires.
   *
   * @default {the database's clock}
   */
  readonly now?: Date;
}

/**
 * What one {@linkcode fireDueSchedules} call did.
 *
 * @example Usage
 * ```ts
 * import type { FiredSchedules } from "@sluice/sluice/admin";
 *
 * const result: FiredSchedules = { fired: 1, advanced: 1 };
 * ```
 */
export interface FiredSchedules {
  /** Ticks fired by this call (a run started, or its failure to start recorded on the tick). */
  readonly fired: number;
  /**
   * Schedules whose next due time this call computed and stored. One whose next due time cannot
   * be computed (its expression never fires again) is paused instead, with the reason as its
   * `lastError`.
   */
  readonly advanced: number;
}

/**
 * Fires every due tick (one run each, exactly once however many callers race), then stores each
 * schedule's next due time. The runs fired record the caller's active trace context, as
 * `startFlow()`'s do (docs/observability.md). Every worker's heartbeat does this; call it yourself where no worker
 * runs a heartbeat, or to drive schedules by a clock of your own in tests.
 *
 * @param sql A client, or a transaction's client.
 * @param options `now`: the time to fire at.
 * @returns How many ticks fired and how many schedules moved on.
 *
 * @example Usage
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { fireDueSchedules } from "@sluice/sluice/admin";
 *
 * console.log(await fireDueSchedules(connect(Deno.env.get("DATABASE_URL")!)));
 * ```
 */
export async function fireDueSchedules(
  sql: Queryable,
  options: FireDueSchedulesOptions = {},
): Promise<FiredSchedules> {
  const { fired, advanced } = await sweepSchedules(
    sql,
    options.now,
    (row) => nextDueOrProblem(row.cron, row.timezone, row.advanced_from),
    // The runs fired join the caller's trace, as a run startFlow() starts does.
    traceparentOf(context.active()),
  );
  return { fired, advanced };
}
