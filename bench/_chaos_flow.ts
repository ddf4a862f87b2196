/**
 * The chaos benchmark's flows and their execution log: a map fan-out, and a parent whose map
 * subflow starts child runs, whose handlers fail at random and record every execution in
 * `chaos.executions`, committed through a connection of their own
 * before they return, so that the log outlives any crash that follows. Ends are also written to a
 * local file first, which the database restart cannot interrupt.
 *
 * @module
 */
import type { Sql } from "postgres";
import type { StepContext } from "../src/dsl/context.ts";
import { Flow } from "../src/dsl/flow.ts";
import { CONCURRENCY_LIMIT } from "./_chaos_limits.ts";

/** Tasks of the map step per run (one per element of the run's input); the leaf adds one. */
export const FAN_OUT = 10;

/** Attempts per task. */
export const MAX_ATTEMPTS = 3;

/**
 * The subflow shape: every `SUBFLOW_EVERY`th run started is of `chaos_sub` (`load`, then a map
 * subflow `kids` of `SUBFLOW_FAN_OUT` runs of `chaos_child`, then `total`) instead of `chaos`.
 */
export const SUBFLOW_EVERY = 4;

/** Children per run of `chaos_sub`: its map subflow starts one per element. */
export const SUBFLOW_FAN_OUT = 3;

/** The subflow shape's parent flow. */
export const SUBFLOW_FLOW = "chaos_sub";

/** The subflow shape's child flow. */
export const CHILD_FLOW = "chaos_child";

/** The flows whose runs and tasks the audit reads (each on its own queue of the same name). */
export const AUDITED_FLOWS: readonly string[] = ["chaos", SUBFLOW_FLOW, CHILD_FLOW];

/** Task timeout in seconds: short, so that the stall window is reachable in a smoke run. */
export const TIMEOUT_SECONDS = 5;

/**
 * Seconds a task may stay `started` before recovery requeues it: `sluice.requeue_stalled_tasks`
 * takes the effective timeout plus 30 s.
 */
export const STALL_WINDOW_SECONDS = TIMEOUT_SECONDS + 30;

/** Share of executions that fail on purpose. */
export const FAILURE_RATE = 0.1;

/** Tasks one worker process runs at once. */
export const MAX_CONCURRENT = 10;

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

/** Where a worker process's handlers record their executions. */
export interface ExecutionLog {
  /** The pool for `chaos.executions` (not the worker's). */
  sql: Sql;
  /** The worker's name in `chaos.executions.worker`. */
  worker: string;
  /**
   * A file of this worker alone that receives every execution's end as a JSON line
   * ({@linkcode ExecutionEnd}) before the handler returns or throws: a local write that cannot
   * fail while the database restarts, read by the benchmark at the end.
   */
  endsPath: string;
}

/** One line of an {@linkcode ExecutionLog.endsPath} file. */
export interface ExecutionEnd {
  id: string;
  ended_at: string;
  outcome: "succeeded" | "failed";
}

/**
 * The flow `chaos`: a root map over the run's input (`FAN_OUT` numbers), limited to
 * `CONCURRENCY_LIMIT` slots per concurrency key (the runs' keys are given at start), then `total`,
 * which depends on it. Every handler records its execution in `log`.
 *
 * @example
 * ```ts ignore
 * import postgres from "postgres";
 * import { chaosFlow } from "./_chaos_flow.ts";
 * const sql = postgres(Deno.env.get("DATABASE_URL")!);
 * const flow = chaosFlow({ sql, worker: "w1", endsPath: "/tmp/w1.ends" });
 * ```
 */
export function chaosFlow(log: ExecutionLog) {
  return new Flow<number[]>({
    slug: "chaos",
    maxAttempts: MAX_ATTEMPTS,
    baseDelay: 1,
    timeout: TIMEOUT_SECONDS,
  })
    .map(
      { slug: "each", concurrency: { limit: CONCURRENCY_LIMIT } },
      (_element, ctx) => recordedExecution(log, ctx),
    )
    .step({ slug: "total", dependsOn: ["each"] }, (_deps, ctx) => recordedExecution(log, ctx));
}

/**
 * The flow `chaos_child`: one step, recorded like every handler. Its runs are the children of
 * {@linkcode chaosSubflowFlow}.
 *
 * @example
 * ```ts ignore
 * const child = chaosChildFlow({ sql, worker: "w1", endsPath: "/tmp/w1.ends" });
 * ```
 */
export function chaosChildFlow(log: ExecutionLog) {
  return new Flow<number>({
    slug: CHILD_FLOW,
    maxAttempts: MAX_ATTEMPTS,
    baseDelay: 1,
    timeout: TIMEOUT_SECONDS,
  })
    .step({ slug: "work" }, (_element, ctx) => recordedExecution(log, ctx));
}

/**
 * The flow `chaos_sub`: `load`, then the map subflow `kids` (one `chaos_child` run per element of
 * `SUBFLOW_FAN_OUT`, its input computed by `load`'s worker and its children started in `load`'s
 * completion), then `total`, which depends on it. Every handler records its execution in `log`.
 *
 * @example
 * ```ts ignore
 * const parent = chaosSubflowFlow({ sql, worker: "w1", endsPath: "/tmp/w1.ends" });
 * ```
 */
export function chaosSubflowFlow(log: ExecutionLog) {
  return new Flow<number>({
    slug: SUBFLOW_FLOW,
    maxAttempts: MAX_ATTEMPTS,
    baseDelay: 1,
    timeout: TIMEOUT_SECONDS,
  })
    .step({ slug: "load" }, (_input, ctx) => recordedExecution(log, ctx))
    .mapSubflow({
      slug: "kids",
      dependsOn: ["load"],
      flow: chaosChildFlow(log),
      input: () => Array.from({ length: SUBFLOW_FAN_OUT }, (_, i) => i),
    })
    .step({ slug: "total", dependsOn: ["kids"] }, (_deps, ctx) => recordedExecution(log, ctx));
}

async function recordedExecution(log: ExecutionLog, ctx: StepContext): Promise<ExecutionOutput> {
  const startedAt = new Date();
  // An id of our own: when the insert's answer is lost in the restart, it may still have
  // committed, and the execution's end must then be known all the same.
  const id = crypto.randomUUID();
  // The worker gives up on an execution when its signal aborts: that is where the execution ends,
  // written at once, even if the handler hangs in a query that never returns.
  let abortedAt: Date | undefined;
  const end = (outcome: ExecutionEnd["outcome"]): ExecutionEnd => {
    const line = { id, ended_at: (abortedAt ?? new Date()).toISOString(), outcome };
    Deno.writeTextFileSync(log.endsPath, `${JSON.stringify(line)}\n`, { append: true });
    return line;
  };
  ctx.signal.addEventListener("abort", () => {
    abortedAt = new Date();
    end("failed");
  }, { once: true });
  const fail = async (error: unknown): Promise<never> => {
    const { ended_at } = end("failed");
    // Best effort: the ends file holds it already.
    await log.sql`
      update chaos.executions set ended_at = ${ended_at}, outcome = 'failed' where id = ${id}`
      .catch(() => {});
    throw error;
  };
  try {
    await log.sql`
      insert into chaos.executions (id, run_id, step_slug, task_index, attempt, worker, started_at)
      values (${id}, ${ctx.runId}, ${ctx.stepSlug}, ${ctx.taskIndex}, ${ctx.attempt},
        ${log.worker}, ${startedAt})`;
    const maxMs = ctx.attempt === 1 ? MAX_FIRST_ATTEMPT_MS : MAX_RETRY_MS;
    await sleep(Math.random() * maxMs, ctx.signal);
  } catch (error) {
    return fail(error);
  }
  if (Math.random() < FAILURE_RATE) {
    return fail(new Error(`chaos: random failure of execution ${id}`));
  }
  const { ended_at } = end("succeeded");
  try {
    // Committed before returning: a completion is backed by a recorded success or by nothing.
    await log.sql`
      update chaos.executions set ended_at = ${ended_at}, outcome = 'succeeded' where id = ${id}`;
  } catch (error) {
    return fail(error);
  }
  return { execution: id };
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
