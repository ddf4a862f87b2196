/**
 * Drives real `startWorker` workers for the worker benchmark: starts them in this process (each
 * with its own pool), starts runs through `startFlow` from a separate producer pool, and measures
 * throughput (all runs started at once) and idle latency (one run at a time).
 *
 * @module
 */
import type { Sql } from "postgres";
import { connect } from "../src/db/connect.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { waitForRun } from "../src/client/wait_for_run.ts";
import { type LogRecord, startWorker, type WorkerHandle } from "../src/worker/mod.ts";
import { processCpuMs } from "./_machine.ts";
import type { LeafHook, WorkerWorkload } from "./_worker_flows.ts";

/** What one throughput repetition measured. */
export interface ThroughputResult {
  /** From just before the first `startFlow` call to the last run's `completed_at` (server clock). */
  wallMs: number;
  /** Tasks completed. */
  tasks: number;
  /** Per run: `completed_at - started_at` in milliseconds, from `sluice.runs`. */
  latenciesMs: number[];
  /**
   * CPU milliseconds of the database's server backends (workers, producer, LISTEN connections),
   * or `undefined` when they do not run on this machine.
   */
  serverCpuMs: number | undefined;
  /** CPU milliseconds of this process: every worker and the producer share it. */
  clientCpuMs: number;
}

/** What the idle-latency measurement found, per run, in milliseconds. */
export interface LatencyResult {
  /** Client side: from calling `startFlow` to `waitForRun` seeing the run completed. */
  wallMs: number[];
  /** Server side: `runs.completed_at - runs.started_at` (transaction start times). */
  dbMs: number[];
  /** Per task: `step_tasks.started_at - queued_at` (queued until claimed). */
  dispatchMs: number[];
  /** Per task: `step_tasks.completed_at - started_at` (claimed until its completion began). */
  executeMs: number[];
}

/** The workers of one combination, plus the producer; disposing them stops everything. */
export interface WorkerPool extends AsyncDisposable {
  /** The running workers. */
  workers: WorkerHandle[];
  /** The producer's client (4 connections). */
  producer: Sql;
}

/**
 * Counts leaf handler calls, so the benchmark knows when every run of a repetition is about to
 * complete without polling the database meanwhile (polling would take CPU from what is measured).
 */
export class LeafCounter {
  #target = 0;
  #seen = new Set<string>();
  #waiters: { runId: string | null; resolve: () => void }[] = [];

  /** The hook the flows' leaf handlers call. */
  readonly hook: LeafHook = (runId) => {
    this.#seen.add(runId);
    for (const waiter of [...this.#waiters]) {
      if (
        waiter.runId === runId || (waiter.runId === null && this.#seen.size >= this.#target)
      ) {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  };

  /** Forgets what was seen and expects `target` leaf calls. */
  reset(target: number): void {
    this.#target = target;
    this.#seen.clear();
  }

  /** Resolves once `target` distinct runs reached their leaf (or `runId` did, when given). */
  reached(runId: string | null, timeoutMs: number): Promise<void> {
    if (runId === null ? this.#seen.size >= this.#target : this.#seen.has(runId)) {
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`Timed out after ${timeoutMs} ms: ${this.#seen.size} runs finished`));
      }, timeoutMs);
      this.#waiters.push({
        runId,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/**
 * Starts `count` workers for the workload, each with its own pool (`connectionString`, default
 * pool size), and a producer client. Worker warnings and errors go to stderr: a benchmark whose
 * workers complain is not measuring the happy path.
 */
export async function startWorkers(
  url: string,
  workload: WorkerWorkload,
  count: number,
  maxConcurrent: number,
): Promise<WorkerPool> {
  const workers: WorkerHandle[] = [];
  const producer = connect(url, { max: 4, applicationName: "sluice-bench-producer" });
  const logger = (record: LogRecord) => {
    console.error(
      `bench: worker ${record.level}: ${record.message} ${JSON.stringify(record.fields)}`,
    );
  };
  const dispose = async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
    await producer.end();
  };
  try {
    for (let i = 0; i < count; i++) {
      workers.push(
        await startWorker(workload.flow, {
          connectionString: url,
          maxConcurrent,
          logLevel: "warn",
          logger,
          env: {},
        }),
      );
    }
  } catch (error) {
    await dispose().catch(() => {});
    throw error;
  }
  return { workers, producer, [Symbol.asyncDispose]: dispose };
}

/**
 * Starts `runs` runs at once (pipelined over the producer's connections) and resolves once all
 * completed. Throws when a run fails or they take longer than `timeoutMs`.
 */
export async function runThroughput(
  pool: WorkerPool,
  admin: Sql,
  workload: WorkerWorkload,
  leaves: LeafCounter,
  runs: number,
  localServer: boolean,
  timeoutMs = 120_000,
): Promise<ThroughputResult> {
  const pids = localServer ? await backendPids(admin) : [];
  const serverCpuBefore = localServer ? await processCpuMs(pids) : undefined;
  const clientCpuBefore = await processCpuMs(["self"]);
  leaves.reset(runs);
  const [{ t0 }] = await admin<{ t0: number }[]>`
    select extract(epoch from clock_timestamp())::float8 * 1000 as t0`;
  const runIds = await Promise.all(
    Array.from({ length: runs }, (_, n) => startFlow(pool.producer, workload.flow, { n })),
  );
  await leaves.reached(null, timeoutMs);
  await untilCompleted(admin, runIds, timeoutMs);
  const serverCpuAfter = localServer ? await processCpuMs(pids) : undefined;
  const clientCpuAfter = await processCpuMs(["self"]);
  const rows = await admin<{ ms: number; end_ms: number }[]>`
    select extract(epoch from completed_at - started_at)::float8 * 1000 as ms,
      extract(epoch from completed_at)::float8 * 1000 as end_ms
    from sluice.runs where run_id = any (${runIds}::uuid[])`;
  return {
    wallMs: Math.max(...rows.map((row) => row.end_ms)) - t0,
    tasks: runs * workload.tasksPerRun,
    latenciesMs: rows.map((row) => row.ms),
    serverCpuMs: serverCpuBefore === undefined || serverCpuAfter === undefined
      ? undefined
      : serverCpuAfter - serverCpuBefore,
    clientCpuMs: (clientCpuAfter ?? 0) - (clientCpuBefore ?? 0),
  };
}

/**
 * Idle latency: `warmUp + runs` runs one after the other, each started after `idleMs` of
 * idleness (the workers are back waiting for a notification), only the last `runs` recorded.
 */
export async function runLatency(
  pool: WorkerPool,
  admin: Sql,
  workload: WorkerWorkload,
  leaves: LeafCounter,
  runs: number,
  warmUp: number,
  idleMs = 50,
): Promise<LatencyResult> {
  const wallMs: number[] = [];
  const runIds: string[] = [];
  for (let i = 0; i < warmUp + runs; i++) {
    await new Promise((resolve) => setTimeout(resolve, idleMs));
    const started = performance.now();
    const runId = await startFlow(pool.producer, workload.flow, { n: i });
    // Poll only once the last handler ran, and then every millisecond: the completion is a round
    // trip away, and earlier polling would compete with the workers for the CPU.
    await leaves.reached(runId, 10_000);
    await waitForRun(pool.producer, runId, {
      timeoutMs: 10_000,
      listen: false,
      pollIntervalMs: 1,
      maxPollIntervalMs: 1,
    });
    if (i >= warmUp) {
      wallMs.push(performance.now() - started);
      runIds.push(runId);
    }
  }
  return await readLatencies(admin, runIds, wallMs);
}

/**
 * The database's side of a latency measurement: per run `completed_at - started_at`, per task
 * queued -> claimed and claimed -> completed. Throws unless every run completed.
 */
export async function readLatencies(
  sql: Sql,
  runIds: readonly string[],
  wallMs: number[],
): Promise<LatencyResult> {
  const runRows = await sql<{ ms: number; status: string }[]>`
    select status, extract(epoch from completed_at - started_at)::float8 * 1000 as ms
    from sluice.runs where run_id = any (${runIds as string[]}::uuid[])`;
  if (runRows.some((row) => row.status !== "completed")) {
    throw new Error("A latency run did not complete");
  }
  const taskRows = await sql<{ dispatch: number; execute: number }[]>`
    select extract(epoch from started_at - queued_at)::float8 * 1000 as dispatch,
      extract(epoch from completed_at - started_at)::float8 * 1000 as execute
    from sluice.step_tasks where run_id = any (${runIds as string[]}::uuid[])`;
  return {
    wallMs,
    dbMs: runRows.map((row) => row.ms),
    dispatchMs: taskRows.map((row) => row.dispatch),
    executeMs: taskRows.map((row) => row.execute),
  };
}

async function untilCompleted(admin: Sql, runIds: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [{ open, failed }] = await admin<{ open: number; failed: number }[]>`
      select count(*) filter (where status = 'started')::int as open,
        count(*) filter (where status = 'failed')::int as failed
      from sluice.runs where run_id = any (${runIds}::uuid[])`;
    if (failed > 0) throw new Error(`${failed} of ${runIds.length} runs failed`);
    if (open === 0) return;
    if (Date.now() > deadline) throw new Error(`${open} of ${runIds.length} runs did not finish`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Server processes of every session connected to the benchmark database (but `admin`'s own). */
async function backendPids(admin: Sql): Promise<number[]> {
  const rows = await admin<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid()`;
  return rows.map((row) => row.pid);
}
