/**
 * `deno task bench:worker [--quick] [...]`: end-to-end throughput and idle latency of real
 * `startWorker` workers with no-op handlers, next to the SQL core's figure for the same shape.
 * See bench/README.md for what is measured and how.
 *
 * Options:
 *   --quick               smoke run: fewer runs, one repetition
 *   --workers 1,2,4       workers (in this process, each with its own pool of 4 connections)
 *   --concurrency 10,50   maxConcurrent of every worker
 *   --shape linear3,map100
 *   --repetitions 3       timed repetitions per combination (after one untimed warm-up)
 *   --latency-runs 20     idle-latency runs (after 20 untimed ones); 0 skips the measurement
 *   --reference 4,1       connection counts of the SQL core reference (batched completion), measured
 *                         in this process right before the workers; the first one is the figure
 *                         the "of SQL core" column compares with; 0 skips it
 *   --profile             print pg_stat_statements / pg_stat_user_functions per combination
 *                         (throwaway cluster only; the statistics themselves cost some speed)
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres, { type Sql } from "postgres";
import { type BenchDatabase, benchDatabase } from "./_bench_database.ts";
import { PROFILE_SETTINGS, profileReport, resetProfile } from "./_pg_profile.ts";
import { usePromptSetImmediate } from "./_prompt_set_immediate.ts";
import {
  compileWorkload,
  openConnections,
  type RepetitionResult,
  runRepetition,
} from "./_sql_core_driver.ts";
import { LINEAR3, MAP100, type Workload } from "./_sql_core_flows.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";
import {
  type LatencyResult,
  LeafCounter,
  runLatency,
  runThroughput,
  startWorkers,
  type ThroughputResult,
} from "./_worker_driver.ts";
import { linear3, map100, type WorkerWorkload } from "./_worker_flows.ts";
import { runLatencyFloor } from "./_worker_latency_floor.ts";

/** Runs per repetition: full and `--quick` (the same as the SQL core benchmark's). */
const RUNS: Record<string, { full: number; quick: number }> = {
  linear3: { full: 500, quick: 60 },
  map100: { full: 20, quick: 3 },
};

/**
 * Untimed idle-latency runs before the recorded ones: enough for every connection of the worker's
 * pool to have cached the plans of the statements it runs.
 */
const LATENCY_WARM_UP = 20;

/** Read batch of the SQL core reference, as in `bench:sql_core`. */
const REFERENCE_BATCH = 20;

const SQL_CORE: Record<string, Workload> = { linear3: LINEAR3, map100: MAP100 };

interface Rate {
  label: string;
  /** A SQL core reference row, not workers. */
  reference: boolean;
  shape: string;
  rates: number[];
  latenciesP50: number[];
  latenciesP95: number[];
  serverCpuPerTask: number | undefined;
  clientCpuPerTask: number;
}

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function list(value: string): string[] {
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}

async function loadAverage(): Promise<string> {
  const text = await Deno.readTextFile("/proc/loadavg").catch(() => "? ? ?");
  return text.split(" ").slice(0, 3).join(" ");
}

function summarize(
  label: string,
  shape: string,
  reference: boolean,
  results: (ThroughputResult | RepetitionResult)[],
): Rate {
  const tasks = results.reduce((sum, r) => sum + r.tasks, 0);
  return {
    label,
    reference,
    shape,
    rates: results.map((r) => r.tasks / r.wallMs * 1000),
    latenciesP50: results.map((r) => median(r.latenciesMs)),
    latenciesP95: results.map((r) => quantile(r.latenciesMs, 0.95)),
    serverCpuPerTask: results.every((r) => r.serverCpuMs !== undefined)
      ? results.reduce((sum, r) => sum + r.serverCpuMs!, 0) / tasks
      : undefined,
    clientCpuPerTask: results.reduce((sum, r) => sum + r.clientCpuMs, 0) / tasks,
  };
}

/** The SQL core driver on `connections` connections with batched completion, as a reference. */
async function measureReference(
  db: BenchDatabase,
  admin: Sql,
  workload: Workload,
  connections: number,
  runs: number,
  repetitions: number,
): Promise<Rate> {
  // The SQL core benchmark's client: a prompt setImmediate, so that it measures the SQL alone.
  // Restored before the workers run: they must be measured as users run them.
  using _prompt = usePromptSetImmediate();
  const label = `SQL core, ${connections} connections`;
  const results: RepetitionResult[] = [];
  await using conns = await openConnections(db.url, connections, workload, db.local);
  await runRepetition(conns, workload, "batched", runs, REFERENCE_BATCH);
  await admin`vacuum analyze`;
  for (let i = 0; i < repetitions; i++) {
    const result = await runRepetition(conns, workload, "batched", runs, REFERENCE_BATCH);
    log(
      `${workload.shape} ${label} #${i + 1}: ${whole(result.tasks / result.wallMs * 1000)} ` +
        `tasks/s (load ${await loadAverage()})`,
    );
    results.push(result);
  }
  return summarize(label, workload.shape, true, results);
}

async function measureWorkers(
  db: BenchDatabase,
  admin: Sql,
  workload: WorkerWorkload,
  leaves: LeafCounter,
  workers: number,
  maxConcurrent: number,
  runs: number,
  repetitions: number,
  profile: boolean,
): Promise<Rate> {
  const label = `${workers} × ${maxConcurrent}`;
  const results: ThroughputResult[] = [];
  {
    await using pool = await startWorkers(db.url, workload, workers, maxConcurrent);
    // Untimed: warms the tables and every pool connection; fresh statistics then replace the plans
    // PL/pgSQL cached on empty tables (see bench:sql_core).
    await runThroughput(pool, admin, workload, leaves, runs, db.local);
    await admin`vacuum analyze`;
    if (profile) await resetProfile(admin);
    for (let i = 0; i < repetitions; i++) {
      const result = await runThroughput(pool, admin, workload, leaves, runs, db.local);
      log(
        `${workload.shape} workers ${label} #${i + 1}: ` +
          `${whole(result.tasks / result.wallMs * 1000)} tasks/s (load ${await loadAverage()})`,
      );
      results.push(result);
    }
  }
  if (profile) {
    console.log(
      `\n### Profile: ${workload.shape}, workers ${label}\n\n${await profileReport(admin)}\n`,
    );
  }
  return summarize(label, workload.shape, false, results);
}

function rateRow(rate: Rate, reference: Rate | undefined): string[] {
  const mid = median(rate.rates);
  const share = reference === undefined || rate.reference
    ? "–"
    : `${Math.round(mid / median(reference.rates) * 100)} %`;
  return [
    rate.shape,
    rate.label,
    `${whole(mid)} (${whole(Math.min(...rate.rates))}–${whole(Math.max(...rate.rates))})`,
    share,
    `${duration(median(rate.latenciesP50))} / ${duration(median(rate.latenciesP95))}`,
    rate.serverCpuPerTask === undefined ? "–" : rate.serverCpuPerTask.toFixed(2),
    rate.clientCpuPerTask.toFixed(2),
  ];
}

function latencyRows(workers: LatencyResult, floor: LatencyResult): string[][] {
  const cells = (values: number[]) => [duration(median(values)), duration(quantile(values, 0.95))];
  const row = (what: string, pick: (result: LatencyResult) => number[]) => [
    what,
    ...cells(pick(workers)),
    ...cells(pick(floor)),
  ];
  return [
    row("client: start → run completed", (r) => r.wallMs),
    row("server: runs.completed_at − started_at", (r) => r.dbMs),
    row("per task: queued → claimed", (r) => r.dispatchMs),
    row("per task: claimed → completion began", (r) => r.executeMs),
  ];
}

/** Throughput target: this share of the SQL core's figure for the same shape. */
const THROUGHPUT_TARGET = 0.7;

/** Idle latency target: median milliseconds from start to completion of a 3-step run. */
const LATENCY_TARGET_MS = 15;

/** The targets, and how the measured figures compare. */
function targetLines(
  rates: Rate[],
  references: Map<string, Rate>,
  latency: { workers: LatencyResult; floor: LatencyResult } | undefined,
): string[] {
  const lines: string[] = [];
  for (const [shape, reference] of references) {
    const workers = rates.filter((rate) => rate.shape === shape && !rate.reference);
    const shares = workers.map((rate) => median(rate.rates) / median(reference.rates));
    if (shares.length === 0) continue;
    const met = shares.filter((share) => share >= THROUGHPUT_TARGET).length;
    lines.push(
      `- ${shape}: ${met} of ${shares.length} worker combinations reach ` +
        `${THROUGHPUT_TARGET * 100} % of ${reference.label} (${
          Math.round(Math.min(...shares) * 100)
        }–${Math.round(Math.max(...shares) * 100)} %).`,
    );
  }
  if (latency !== undefined) {
    const { workers, floor } = latency;
    lines.push(
      `- idle latency, target median <= ${LATENCY_TARGET_MS} ms: workers ` +
        `${duration(median(workers.wallMs))} client / ${duration(median(workers.dbMs))} server; ` +
        `the SQL alone ${duration(median(floor.wallMs))} / ${duration(median(floor.dbMs))}.`,
    );
  }
  return lines.length === 0 ? [] : ["Targets:", "", ...lines];
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      workers: { type: "string", default: "1,2,4" },
      concurrency: { type: "string", default: "10,50" },
      shape: { type: "string", default: "linear3,map100" },
      repetitions: { type: "string" },
      "latency-runs": { type: "string", default: "20" },
      reference: { type: "string", default: "4,1" },
      profile: { type: "boolean", default: false },
    },
  });
  const workerCounts = list(values.workers).map(Number);
  const concurrencies = list(values.concurrency).map(Number);
  const shapes = list(values.shape);
  const repetitions = Number(values.repetitions ?? (values.quick ? 1 : 3));
  const latencyRuns = Number(values["latency-runs"]);
  const referenceConnections = list(values.reference).map(Number).filter((n) => n > 0);
  for (const shape of shapes) {
    if (!(shape in RUNS)) throw new Error(`Unknown --shape "${shape}": linear3 or map100`);
  }
  if (values.profile && Deno.env.get("DATABASE_URL")) {
    throw new Error("--profile needs the throwaway cluster: unset DATABASE_URL");
  }

  const loadBefore = await loadAverage();
  await using db = await benchDatabase({ settings: values.profile ? PROFILE_SETTINGS : {} });
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const admin = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const leaves = new LeafCounter();
  const workloads: Record<string, WorkerWorkload> = {
    linear3: linear3(leaves.hook),
    map100: map100(leaves.hook),
  };
  const rates: Rate[] = [];
  const references = new Map<string, Rate>();
  let latency: { workers: LatencyResult; floor: LatencyResult } | undefined;
  try {
    for (const shape of shapes) {
      const runs = RUNS[shape][values.quick ? "quick" : "full"];
      if (referenceConnections.length > 0) {
        const workload = SQL_CORE[shape];
        await compileWorkload(admin, workload);
        for (const connections of referenceConnections) {
          const reference = await measureReference(
            db,
            admin,
            workload,
            connections,
            runs,
            repetitions,
          );
          if (!references.has(shape)) references.set(shape, reference);
          rates.push(reference);
        }
      }
      for (const workers of workerCounts) {
        for (const maxConcurrent of concurrencies) {
          rates.push(
            await measureWorkers(
              db,
              admin,
              workloads[shape],
              leaves,
              workers,
              maxConcurrent,
              runs,
              repetitions,
              values.profile,
            ),
          );
        }
      }
    }
    if (latencyRuns > 0) {
      const workload = workloads.linear3;
      let workers: LatencyResult;
      {
        await using pool = await startWorkers(db.url, workload, 1, 10);
        workers = await runLatency(pool, admin, workload, leaves, latencyRuns, LATENCY_WARM_UP);
      }
      // On the same flow and queue, now without a worker.
      const floor = await runLatencyFloor(db.url, workload.flow.slug, latencyRuns, LATENCY_WARM_UP);
      latency = { workers, floor };
      log(
        `idle latency: median ${duration(median(workers.wallMs))} client, ` +
          `${duration(median(workers.dbMs))} server; SQL floor ${duration(median(floor.dbMs))} ` +
          `server (load ${await loadAverage()})`,
      );
    }
  } finally {
    await admin.end();
  }

  const runsNote = shapes.map((s) => `${s} ${RUNS[s][values.quick ? "quick" : "full"]} runs`);
  const lines = [
    "",
    `## Worker benchmark${values.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}; ${navigator.hardwareConcurrency} CPUs; ` +
    `load average before ${loadBefore}, after ${await loadAverage()}.`,
    `${runsNote.join(", ")}, all started at once through startFlow() (4 producer connections); ` +
    `no-op handlers; workers in this process, each with its own pool of 4 connections plus ` +
    `one LISTEN connection; median of ${repetitions} after one untimed warm-up (min–max).`,
  ];
  if (rates.length > 0) {
    lines.push(
      "",
      markdownTable(
        [
          "shape",
          "workers × maxConcurrent",
          "tasks/s median (min–max)",
          `of SQL core ×${referenceConnections[0] ?? "–"}`,
          "run latency p50 / p95",
          "server CPU ms/task",
          "client CPU ms/task",
        ],
        rates.map((rate) => rateRow(rate, references.get(rate.shape))),
      ),
    );
  }
  if (latency !== undefined) {
    lines.push(
      "",
      `Idle latency of the 3-step linear flow: ${latencyRuns} runs one at a time (after ` +
        `${LATENCY_WARM_UP} untimed), 50 ms idle before each. Workers: 1 worker ` +
        "(maxConcurrent 10) waiting on LISTEN; client time from calling startFlow() until " +
        "waitForRun() (polling every 1 ms once the last handler ran) sees the run completed. " +
        "SQL floor: the same 7 statements sent back to back by one client (no worker, no " +
        "NOTIFY, no handler); client time until the last complete_tasks returned. Server time " +
        "is between the transaction starts of start_flow and of the completing complete_tasks.",
      "",
      markdownTable(
        ["measure", "workers median", "p95", "SQL floor median", "p95"],
        latencyRows(latency.workers, latency.floor),
      ),
    );
  }
  lines.push("", ...targetLines(rates, references, latency));
  console.log(lines.join("\n"));
}

if (import.meta.main) await main(Deno.args);
