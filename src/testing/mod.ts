/**
 * `@sluice/sluice/testing`: run flows in `deno test` without a server. {@linkcode startTestDatabase}
 * gives an embedded database with sluice installed (or the database at `DATABASE_URL`),
 * {@linkcode runFlow} runs one flow to completion with in-process workers for every route and
 * skips retry delays, so a step that fails and retries after a minute completes at once.
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
  return { url, sql, embedded: embedded !== null, stop, [Symbol.asyncDispose]: stop };
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
   * Make retry delays pass at once (the test clock): every queued task of the run whose message
   * is delayed becomes visible right away. `false` waits for them in real time.
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
