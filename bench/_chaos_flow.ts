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

/**
 * The side tables: one row per execution (inserted when the handler starts, finished before it
 * returns) and one per worker process (written by the benchmark at the end).
 */
export const CHAOS_SCHEMA = `
create schema chaos;
create table chaos.executions (
  id integer generated always as identity primary key,
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
  execution: number;
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
  const [{ id }] = await log<{ id: number }[]>`
    insert into chaos.executions (run_id, step_slug, task_index, attempt, worker, started_at)
    values (${ctx.runId}, ${ctx.stepSlug}, ${ctx.taskIndex}, ${ctx.attempt}, ${worker},
      ${startedAt})
    returning id`;
  const maxMs = ctx.attempt === 1 ? MAX_FIRST_ATTEMPT_MS : MAX_RETRY_MS;
  await new Promise((resolve) => setTimeout(resolve, Math.random() * maxMs));
  const failed = Math.random() < FAILURE_RATE;
  await log`
    update chaos.executions
    set ended_at = ${new Date()}, outcome = ${failed ? "failed" : "succeeded"}
    where id = ${id}`;
  if (failed) throw new Error(`chaos: random failure of execution ${id}`);
  return { execution: id };
}
