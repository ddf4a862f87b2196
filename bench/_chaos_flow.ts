/**
 * The chaos benchmark's flow and its execution log: a map fan-out whose handlers fail at random
 * and record every execution in `chaos.executions`, committed through a connection of their own
 * before they return, so that the log outlives any crash that follows.
 *
 * @module
 */
import type { Sql } from "postgres";
import type { StepContext } from "../src/dsl/context.ts";
import { Flow } from "../src/dsl/flow.ts";

/** Tasks of the map step per run (one per element of the run's input); the leaf adds one. */
export const FAN_OUT = 10;

/** Attempts per task. */
export const MAX_ATTEMPTS = 3;

/** Task timeout in seconds: short, so that the stall window is reachable in a smoke run. */
export const TIMEOUT_SECONDS = 5;

/**
 * Seconds a task may stay `started` before recovery requeues it: `sluice.requeue_stalled_tasks`
 * takes the effective timeout plus 30 s.
 */
export const STALL_WINDOW_SECONDS = TIMEOUT_SECONDS + 30;

/** Share of executions that fail on purpose. */
export const FAILURE_RATE = 0.1;

/** Longest time a first attempt sleeps (uniformly from 0), so that tasks are in flight when hit. */
const MAX_FIRST_ATTEMPT_MS = 100;

/**
 * Longest time a retry sleeps: longer than the 2 s backoff after a second attempt, so that a late
 * report of attempt 1 that the engine wrongly accepts (it requeues the task) leads to a third
 * execution while the second still runs.
 */
const MAX_RETRY_MS = 4000;

/** How often, and how far apart, a failed execution's end is retried (30 s in all). */
const END_RECORD_RETRIES = 120;
const END_RECORD_RETRY_MS = 250;

/**
 * The side tables: one row per execution (inserted when the handler starts, finished before it
 * returns) and one per worker process (written by the benchmark at the end).
 */
export const CHAOS_SCHEMA = `
create schema chaos;
create table chaos.executions (
  id uuid primary key,
  run_id uuid not null,
  step_slug text not null,
  task_index integer not null,
  attempt integer not null,
  worker text not null,
  started_at timestamptz not null,
  ended_at timestamptz,
  outcome text not null default 'running' check (outcome in ('running', 'succeeded', 'failed'))
);
create index on chaos.executions (run_id, step_slug, task_index);
create table chaos.workers (
  name text primary key,
  pid integer not null,
  spawned_at timestamptz not null,
  stopped_at timestamptz not null
);
`;

/** What every handler returns: the execution that produced the output, for the audit. */
export interface ExecutionOutput {
  /** `chaos.executions.id`. */
  execution: string;
}

/**
 * The flow `chaos`: a root map over the run's input (`FAN_OUT` numbers), then `total`, which
 * depends on it. Every handler logs its execution through `log` under the worker name `worker`.
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { chaosFlow } from "./_chaos_flow.ts";
 * const flow = chaosFlow(postgres(Deno.env.get("DATABASE_URL")!), "w1");
 * ```
 */
export function chaosFlow(log: Sql, worker: string) {
  const execute = (ctx: StepContext) => recordedExecution(log, worker, ctx);
  return new Flow<number[]>({
    slug: "chaos",
    maxAttempts: MAX_ATTEMPTS,
    baseDelay: 1,
    timeout: TIMEOUT_SECONDS,
  })
    .map({ slug: "each" }, (_element, ctx) => execute(ctx))
    .step({ slug: "total", dependsOn: ["each"] }, (_deps, ctx) => execute(ctx));
}

async function recordedExecution(
  log: Sql,
  worker: string,
  ctx: StepContext,
): Promise<ExecutionOutput> {
  const startedAt = new Date();
  // The worker gives up on an execution when its signal aborts: that is where the execution ends.
  let abortedAt: Date | undefined;
  ctx.signal.addEventListener("abort", () => abortedAt ??= new Date(), { once: true });
  // An id of our own: when the insert's answer is lost in a restart, it may still have
  // committed, and its end must then be recorded all the same.
  const id = crypto.randomUUID();
  try {
    await log`
      insert into chaos.executions (id, run_id, step_slug, task_index, attempt, worker, started_at)
      values (${id}, ${ctx.runId}, ${ctx.stepSlug}, ${ctx.taskIndex}, ${ctx.attempt}, ${worker},
        ${startedAt})`;
  } catch (error) {
    keepRecordingEnd(log, id, abortedAt ?? new Date());
    throw error;
  }
  let failed = Math.random() < FAILURE_RATE;
  try {
    await sleep(
      Math.random() * (ctx.attempt === 1 ? MAX_FIRST_ATTEMPT_MS : MAX_RETRY_MS),
      ctx.signal,
    );
  } catch {
    failed = true;
  }
  const endedAt = abortedAt ?? new Date();
  if (!failed) {
    try {
      await recordEnd(log, id, endedAt, "succeeded");
      return { execution: id };
    } catch (error) {
      // Not recorded, so not a success: the attempt fails, its end is recorded once possible.
      keepRecordingEnd(log, id, endedAt);
      throw error;
    }
  }
  keepRecordingEnd(log, id, endedAt);
  throw ctx.signal.aborted
    ? ctx.signal.reason
    : new Error(`chaos: random failure of execution ${id}`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

async function recordEnd(log: Sql, id: string, endedAt: Date, outcome: string): Promise<void> {
  await log`update chaos.executions set ended_at = ${endedAt}, outcome = ${outcome} where id = ${id}`;
}

/**
 * Records a failed execution's end in the background, retrying while the database is away (a
 * restart): without its end, the audit would think it ran until its worker was killed.
 */
function keepRecordingEnd(log: Sql, id: string, endedAt: Date): void {
  (async () => {
    for (let retry = 0; retry < END_RECORD_RETRIES; retry++) {
      try {
        return await recordEnd(log, id, endedAt, "failed");
      } catch {
        await new Promise((resolve) => setTimeout(resolve, END_RECORD_RETRY_MS));
      }
    }
  })();
}
