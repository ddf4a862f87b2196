/**
 * `@sluice/sluice/testing`: run flows in `deno test` without a server. {@linkcode startTestDatabase}
 * gives an embedded database with sluice installed (or the database at `DATABASE_URL`),
 * {@linkcode runFlow} runs one flow to completion with in-process workers for every route and
 * skips retry delays, so a step that fails and retries after a minute completes at once; the
 * database's {@linkcode TestClock} moves sluice's time forward by hand: retry delays and task
 * timeouts (a task past its timeout is recovered as stalled).
 *
 * @example Test a flow with a retry
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { runFlow, startTestDatabase } from "@sluice/sluice/testing";
 *
 * Deno.test("retries", async () => {
 *   await using db = await startTestDatabase();
 *   const flow = new Flow<{ n: number }>({ slug: "t", baseDelay: 60 })
 *     .step({ slug: "a" }, (input, ctx) => {
 *       if (ctx.attempt === 1) throw new Error("flaky");
 *       return input.n;
 *     });
 *   const result = await runFlow(db, flow, { n: 1 });
 *   console.log(result.output, result.attempts("a")); // { a: 1 } 2
 * });
 * ```
 *
 * @module
 */

import type { Sql } from "../db/postgres.ts";
import { connect } from "../db/connect.ts";
import { skipRetryDelays } from "../db/testing_queries.ts";
import { migrate } from "../ops/migrate.ts";
import { routingOf } from "../dsl/routing.ts";
import { startFlow } from "../client/start_flow.ts";
import { getRun, type RunState } from "../client/get_run.ts";
import { getRunTasks, type TaskState } from "../client/get_run_tasks.ts";
import { startWorker, type WorkerHandle } from "../worker/mod.ts";
import { startEmbeddedPostgres } from "./embedded_postgres.ts";

export {
  type EmbeddedPostgres,
  startEmbeddedPostgres,
  type StartEmbeddedPostgresOptions,
} from "./embedded_postgres.ts";

/** A database with sluice installed, for tests. Dispose it (or call `stop()`) at the end. */
export interface TestDatabase extends AsyncDisposable {
  /** Connection URL. */
  readonly url: string;
  /** A postgres.js client on it. */
  readonly sql: Sql;
  /** Whether this is the embedded database (PGlite in this process). */
  readonly embedded: boolean;
  /** Moves sluice's time forward in this database. */
  readonly clock: TestClock;
  /** Closes the client and, for the embedded database, the database. */
  stop(): Promise<void>;
}

/**
 * Starts an embedded database (or connects to `DATABASE_URL` when set) and installs sluice.
 *
 * @returns The database, migrated.
 */
export async function startTestDatabase(): Promise<TestDatabase> {
  const given = Deno.env.get("DATABASE_URL") ?? "";
  const embedded = given === "" ? await startEmbeddedPostgres() : null;
  const url = embedded?.url ?? given;
  const sql = connect(url, { max: 2, applicationName: "sluice-testing" });
  const stop = async () => {
    await sql.end();
    await embedded?.stop();
  };
  try {
    await migrate(sql);
  } catch (error) {
    await stop();
    throw error;
  }
  const clock = new TestClock(sql);
  return { url, sql, embedded: embedded !== null, clock, stop, [Symbol.asyncDispose]: stop };
}

/**
 * The test clock: moves sluice's time forward without waiting. PostgreSQL's own clock cannot be
 * moved, so the clock moves the times sluice compares with it back instead: every PGMQ message's
 * visibility time (retry delays, and the claim of a started task) and every started task's
 * `started_at` (its timeout). Then it runs stall recovery, so a task whose timeout (plus the
 * 30 s stall margin) has passed on the test clock is requeued, or exhausted on its last attempt,
 * exactly as after a vanished worker; and it wakes the workers of every queue.
 */
export class TestClock {
  #sql: Sql;
  #advancedSeconds = 0;

  /** @param sql The test database's client. */
  constructor(sql: Sql) {
    this.#sql = sql;
  }

  /** How far the clock has been moved in total, in seconds. */
  get advancedSeconds(): number {
    return this.#advancedSeconds;
  }

  /**
   * Moves the clock forward by `seconds`, in one transaction.
   *
   * @param seconds How far, at least 0.
   * @returns How many stalled tasks stall recovery handled.
   * @throws {RangeError} When `seconds` is not a finite number >= 0.
   */
  async advance(seconds: number): Promise<number> {
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) {
      throw new RangeError(
        `Cannot advance the test clock: seconds must be a finite number >= 0, got ${seconds}`,
      );
    }
    const recovered = await this.#sql.begin(async (tx) => {
      await tx`
        update sluice.step_tasks set started_at = started_at - make_interval(secs => ${seconds})
        where status = 'started' and started_at is not null`;
      const queues = await tx<{ queue_name: string }[]>`select queue_name from pgmq.meta`;
      for (const { queue_name } of queues) {
        await tx.unsafe(
          `update pgmq.${quoteIdent(`q_${queue_name}`)} set vt = vt - make_interval(secs => $1)`,
          [seconds],
        );
      }
      const [{ handled }] = await tx<{ handled: number }[]>`
        select sluice.requeue_stalled_tasks() as handled`;
      for (const { queue_name } of queues) await tx`select sluice.notify_queue(${queue_name})`;
      return handled;
    });
    this.#advancedSeconds += seconds;
    return recovered;
  }
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Options of {@linkcode runFlow}. */
export interface RunFlowOptions {
  /**
   * How long the run may take, in wall-clock milliseconds.
   *
   * @default {30000}
   */
  timeoutMs?: number;
  /**
   * Make retry delays pass at once: every queued task of the run whose message is delayed
   * becomes visible right away. `false` leaves them to real time or to `db.clock.advance()`.
   *
   * @default {true}
   */
  skipDelays?: boolean;
}

/** What {@linkcode runFlow} saw: the run, its tasks, and lookups for assertions. */
export interface FlowResult {
  /** The run id. */
  readonly runId: string;
  /** `completed` or `failed` (or `cancelled`, when the run was cancelled meanwhile). */
  readonly status: RunState["status"];
  /** The run output (`null` unless completed). */
  readonly output: unknown;
  /** The run's error message when it failed. */
  readonly errorMessage: string | null;
  /** The run with its steps. */
  readonly run: RunState;
  /** Every task of the run. */
  readonly tasks: readonly TaskState[];
  /** The output of step `stepSlug` (an array for a map step). */
  stepOutput(stepSlug: string): unknown;
  /** Attempts of step `stepSlug`'s task `taskIndex` (default 0). */
  attempts(stepSlug: string, taskIndex?: number): number;
  /** The last error of step `stepSlug`'s task `taskIndex` (default 0), or `null`. */
  lastError(stepSlug: string, taskIndex?: number): string | null;
}

/** Thrown by {@linkcode runFlow} when the run is not resolved in time. */
export class FlowRunTimeoutError extends Error {
  /** The run id. */
  runId: string;
  /** The limit, in milliseconds. */
  timeoutMs: number;

  /**
   * @param runId The run id.
   * @param timeoutMs The limit, in milliseconds.
   */
  constructor(runId: string, timeoutMs: number) {
    super(`Cannot finish run ${runId}: not resolved within ${timeoutMs} ms`);
    this.name = "FlowRunTimeoutError";
    this.runId = runId;
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Runs `flow` once with `input`: starts in-process workers for every route (one for a plain flow,
 * one per step of a step-queued flow, the wrapped flow's of a deployed flow), waits until the run
 * completes or fails, stops the workers and returns what happened. A failed run is returned, not
 * thrown.
 *
 * @param db The test database.
 * @param flow A plain, step-queued or deployed flow.
 * @param input The run input.
 * @param options Timeout and the test clock.
 * @throws {FlowRunTimeoutError} When the run is not resolved within `timeoutMs`.
 */
export async function runFlow(
  db: TestDatabase,
  flow: unknown,
  input: unknown,
  options: RunFlowOptions = {},
): Promise<FlowResult> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const routing = routingOf(flow);
  const stepSlugs: (string | undefined)[] = routing.queueMode === "flow"
    ? [undefined]
    : routing.flow.steps.map((step) => step.slug);
  const workers: WorkerHandle[] = [];
  try {
    for (const stepSlug of stepSlugs) {
      workers.push(
        await startWorker(
          flow as never,
          {
            connectionString: db.url,
            poolSize: 2,
            pollIntervalMs: 20,
            logger: () => {},
            ...(stepSlug === undefined ? {} : { stepSlug }),
            ...(routing.alias === undefined ? {} : { activate: "on-startup" }),
          } as never,
        ),
      );
    }
    const runId = await startFlow(db.sql, flow as never, input as never);
    const deadline = Date.now() + timeoutMs;
    let run = await getRun(db.sql, runId);
    while (run === null || run.status === "started") {
      if (Date.now() > deadline) throw new FlowRunTimeoutError(runId, timeoutMs);
      if (options.skipDelays !== false) await skipRetryDelays(db.sql, runId);
      await new Promise((resolve) => setTimeout(resolve, 20));
      run = await getRun(db.sql, runId);
    }
    const tasks = await getRunTasks(db.sql, runId);
    const task = (stepSlug: string, taskIndex: number) => {
      const found = tasks.find((t) => t.stepSlug === stepSlug && t.taskIndex === taskIndex);
      if (found === undefined) {
        throw new RangeError(`Cannot find task ${taskIndex} of step "${stepSlug}" in run ${runId}`);
      }
      return found;
    };
    const finished = run;
    return {
      runId,
      status: finished.status,
      output: finished.output,
      errorMessage: finished.errorMessage,
      run: finished,
      tasks,
      stepOutput(stepSlug) {
        const step = finished.steps.find((s) => s.stepSlug === stepSlug);
        if (step === undefined) {
          throw new RangeError(`Cannot find step "${stepSlug}" in run ${runId}`);
        }
        return step.output;
      },
      attempts: (stepSlug, taskIndex = 0) => task(stepSlug, taskIndex).attempts,
      lastError: (stepSlug, taskIndex = 0) => task(stepSlug, taskIndex).lastError,
    };
  } finally {
    for (const worker of workers) await worker.stop();
  }
}
