/**
 * `deno task bench:vs_pgflow [--quick] [...]`: sluice against pgflow 0.14.1 on one cluster, side
 * by side. pgflow's SQL is loaded at run time into a database of its own next to sluice's (never
 * into the product); both run on the real PGMQ extension and are driven with no-op handlers:
 * pgflow with its protocol (`pgmq.read`, `start_tasks`, one `complete_task` per task), sluice with
 * the same protocol and with its batched one (`complete_tasks` per claimed batch). Every run's
 * output is verified. See bench/README.md.
 *
 * Options:
 *   --quick               smoke run: fewer runs, one repetition
 *   --shape linear3,map100,wide10
 *   --connections 4       worker connections per engine
 *   --batch 10            messages per pgmq.read
 *   --repetitions 3       timed repetitions per engine and shape (after one untimed warm-up),
 *                         the engines taking turns so that a change of load hits all of them
 *   --events on|off       sluice's live run events (on, as shipped)
 *   --pgflow DIR          pgflow's SQL (migrations/, stubs.sql); default ../shared/pgflow-0.14.1
 *   --pgmq DIR            the real PGMQ extension's files for the throwaway cluster; default
 *                         $SLUICE_BENCH_PGMQ_EXTENSION_DIR, else ../shared/pgmq-1.5.1
 *
 * Uses a throwaway cluster with `pg_stat_statements`, or the server at DATABASE_URL when set
 * (which must offer the pgmq extension and preload pg_stat_statements).
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres, { type Sql } from "postgres";
import { type ActivitySamples, startActivitySampler } from "./_activity_sampler.ts";
import { benchDatabase } from "./_bench_database.ts";
import { type Cost, costMark, costSince } from "./_cost.ts";
import { loadAverage } from "./_machine.ts";
import {
  definePgflowWorkload,
  loadPgflow,
  openPgflowConnections,
  runPgflowRepetition,
  verifyRunOutputs,
} from "./_pgflow.ts";
import { PROFILE_SETTINGS } from "./_pg_profile.ts";
import { usePromptSetImmediate } from "./_prompt_set_immediate.ts";
import {
  compileWorkload,
  type CompletionMode,
  openConnections,
  runRepetition,
} from "./_sql_core_driver.ts";
import { LINEAR3, MAP100, WIDE10, type Workload } from "./_sql_core_flows.ts";
import { markdownTable, median, whole } from "./_stats.ts";

const WORKLOADS: Record<string, Workload> = { linear3: LINEAR3, map100: MAP100, wide10: WIDE10 };

/** Runs per repetition: full and `--quick`. */
const RUNS: Record<string, { full: number; quick: number }> = {
  linear3: { full: 500, quick: 60 },
  map100: { full: 20, quick: 3 },
  wide10: { full: 200, quick: 25 },
};

const ROOT = new URL("../", import.meta.url);

/** An engine and the protocol it is driven with. */
interface Contender {
  label: string;
  engine: "pgflow" | "sluice";
  mode: CompletionMode;
}

const CONTENDERS: Contender[] = [
  { label: "pgflow, complete_task", engine: "pgflow", mode: "single" },
  { label: "sluice, complete_task", engine: "sluice", mode: "single" },
  { label: "sluice, complete_tasks", engine: "sluice", mode: "batched" },
];

/** One timed repetition of one contender. */
interface Sample {
  rate: number;
  cost: Cost;
  activity: ActivitySamples;
  load: string;
}

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function list(value: string): string[] {
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}

function repoPath(relative: string): string {
  return new URL(relative, ROOT).pathname;
}

/** Where each engine's database is and how to reach it. */
interface Databases {
  sluiceUrl: string;
  pgflowUrl: string;
  local: boolean;
}

/** One repetition (`timed`) or the untimed warm-up of `contender` on `workload`. */
async function repetition(
  dbs: Databases,
  admins: Record<Contender["engine"], Sql>,
  contender: Contender,
  workload: Workload,
  options: { runs: number; connections: number; batchSize: number },
): Promise<Sample> {
  const { runs, connections, batchSize } = options;
  const admin = admins[contender.engine];
  const url = contender.engine === "pgflow" ? dbs.pgflowUrl : dbs.sluiceUrl;
  const schemas = contender.engine === "pgflow" ? ["pgflow", "pgmq"] : ["sluice", "pgmq"];
  const load = await loadAverage();
  const mark = await costMark(admin, schemas);
  const sampler = await startActivitySampler(url, new URL(url).pathname.slice(1));
  let wallMs: number;
  let tasks: number;
  let activity: ActivitySamples;
  try {
    if (contender.engine === "pgflow") {
      await using conns = await openPgflowConnections(url, connections, workload, dbs.local);
      ({ wallMs, tasks } = await runPgflowRepetition(conns, workload, runs, batchSize));
    } else {
      await using conns = await openConnections(url, connections, workload, dbs.local);
      ({ wallMs, tasks } = await runRepetition(conns, workload, contender.mode, runs, batchSize));
    }
  } finally {
    // Stopped before the cost is read: its own statements are not the engines'.
    activity = await sampler.stop();
  }
  const cost = await costSince(admin, mark, schemas);
  return { rate: tasks / wallMs * 1000, cost, activity, load };
}

function ratio(value: number, reference: number | undefined): string {
  return reference === undefined || reference === 0 ? "" : ` (${(value / reference).toFixed(2)}×)`;
}

function row(
  shape: string,
  contender: Contender,
  samples: Sample[],
  units: number,
  reference: Sample[] | undefined,
): string[] {
  const med = (pick: (s: Sample) => number, of = samples) => median(of.map(pick));
  const per = (pick: (c: Cost) => number) => (s: Sample) => pick(s.cost) / units;
  const cell = (pick: (s: Sample) => number, digits = 0) => {
    const value = med(pick);
    const text = digits === 0 ? whole(value) : value.toFixed(digits);
    return contender.engine === "pgflow" || reference === undefined
      ? text
      : text + ratio(value, med(pick, reference));
  };
  const rates = samples.map((s) => s.rate);
  const activity = samples.reduce(
    (sum, s) => ({
      active: sum.active + s.activity.active,
      lockObject: sum.lockObject + s.activity.lockObject,
    }),
    { active: 0, lockObject: 0 },
  );
  return [
    shape,
    contender.label,
    `${cell((s) => s.rate)} [${whole(Math.min(...rates))}–${whole(Math.max(...rates))}]`,
    cell(per((c) => c.walBytes)),
    cell(per((c) => c.bufferAccesses)),
    `${med(per((c) => c.clientStatements)).toFixed(2)} + ${
      cell(per((c) => c.nestedStatements), 1)
    }`,
    cell(per((c) => c.rowsUpdated), 2),
    activity.active === 0 ? "–" : `${(activity.lockObject / activity.active * 100).toFixed(1)} %`,
    samples.map((s) => s.load.split(" ")[0]).join(", "),
  ];
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      shape: { type: "string", default: "linear3,map100,wide10" },
      connections: { type: "string", default: "4" },
      batch: { type: "string", default: "10" },
      repetitions: { type: "string" },
      events: { type: "string", default: "on" },
      pgflow: { type: "string", default: repoPath("../shared/pgflow-0.14.1") },
      pgmq: { type: "string" },
    },
  });
  const shapes = list(values.shape);
  for (const shape of shapes) {
    if (!(shape in WORKLOADS)) {
      throw new Error(`Unknown --shape "${shape}": ${Object.keys(WORKLOADS).join(", ")}`);
    }
  }
  if (values.events !== "on" && values.events !== "off") {
    throw new Error(`Unknown --events "${values.events}": on or off`);
  }
  const events = values.events === "on";
  const connections = Number(values.connections);
  const batchSize = Number(values.batch);
  const repetitions = Number(values.repetitions ?? (values.quick ? 1 : 3));
  for (
    const [name, value] of [["connections", connections], ["batch", batchSize], [
      "repetitions",
      repetitions,
    ]] as const
  ) {
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`--${name} must be a whole number of at least 1, got ${value}`);
    }
  }
  const pgmqDir = values.pgmq ?? Deno.env.get("SLUICE_BENCH_PGMQ_EXTENSION_DIR") ??
    repoPath("../shared/pgmq-1.5.1");
  if (Deno.env.get("DATABASE_URL") === undefined) {
    Deno.env.set("SLUICE_BENCH_PGMQ_EXTENSION_DIR", pgmqDir);
  }
  using _prompt = usePromptSetImmediate();

  const loadBefore = await loadAverage();
  await using db = await benchDatabase({ settings: { ...PROFILE_SETTINGS, autovacuum: "off" } });
  if (db.pgmq === "compat") {
    throw new Error(
      "bench: pgflow needs the real PGMQ extension, and the server offers none (--pgmq DIR)",
    );
  }
  const pgflowUrl = new URL(db.url);
  pgflowUrl.pathname = `/pgflow_bench_${crypto.randomUUID().slice(0, 8)}`;
  const serverUrl = new URL(db.url);
  serverUrl.pathname = "/postgres";
  const server = postgres(serverUrl.href, { max: 1, prepare: false, onnotice: () => {} });
  await server.unsafe(`create database ${pgflowUrl.pathname.slice(1)}`);
  const admins = {
    sluice: postgres(db.url, { max: 1, prepare: false, onnotice: () => {} }),
    pgflow: postgres(pgflowUrl.href, { max: 1, prepare: false, onnotice: () => {} }),
  };
  const rows: string[][] = [];
  try {
    await loadPgflow(pgflowUrl.href, values.pgflow);
    log(`databases ready: ${db.server}, PGMQ ${db.pgmq}; pgflow loaded from ${values.pgflow}`);
    const dbs: Databases = { sluiceUrl: db.url, pgflowUrl: pgflowUrl.href, local: db.local };
    for (const shape of shapes) {
      const workload = WORKLOADS[shape];
      const runs = RUNS[shape][values.quick ? "quick" : "full"];
      await compileWorkload(admins.sluice, workload, events);
      await definePgflowWorkload(admins.pgflow, workload);
      const options = { runs, connections, batchSize };
      // Untimed: fills the tables like a running system's, so that the timed repetitions run on
      // plans made with statistics (the analyze below) rather than on empty tables.
      for (const contender of CONTENDERS) {
        await repetition(dbs, admins, contender, workload, options);
      }
      await admins.sluice`vacuum analyze`;
      await admins.pgflow`vacuum analyze`;
      const samples = new Map<Contender, Sample[]>(CONTENDERS.map((c) => [c, []]));
      for (let i = 0; i < repetitions; i++) {
        for (const contender of CONTENDERS) {
          const sample = await repetition(dbs, admins, contender, workload, options);
          samples.get(contender)!.push(sample);
          log(
            `${shape} ${contender.label} #${i + 1}: ${whole(sample.rate)} tasks/s, ` +
              `${whole(sample.cost.walBytes / (runs * workload.tasksPerRun))} WAL bytes/task ` +
              `(load ${sample.load})`,
          );
          await admins[contender.engine]`vacuum analyze`;
        }
      }
      // Warm-up and timed repetitions: every run of both engines completed with its output.
      const total = runs * (repetitions + 1);
      await verifyRunOutputs(admins.pgflow, "pgflow", workload, total);
      await verifyRunOutputs(admins.sluice, "sluice", workload, total * 2);
      const reference = samples.get(CONTENDERS[0]);
      for (const contender of CONTENDERS) {
        rows.push(
          row(shape, contender, samples.get(contender)!, runs * workload.tasksPerRun, reference),
        );
      }
    }
  } finally {
    await admins.sluice.end();
    await admins.pgflow.end();
    await server.unsafe(`drop database if exists ${pgflowUrl.pathname.slice(1)} with (force)`);
    await server.end();
  }
  console.log([
    "",
    `## sluice vs pgflow 0.14.1${values.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}, both engines in databases of one cluster; autovacuum off; ` +
    `${navigator.hardwareConcurrency} CPUs; load average before ${loadBefore}, after ` +
    `${await loadAverage()}. ${connections} worker connections, read batch ${batchSize}, sluice's ` +
    `run events ${values.events}; median of ${repetitions} repetitions [min–max tasks/s], the ` +
    "engines taking turns, each after a vacuum; (×) is against pgflow on the same shape. The cost " +
    "columns hardly depend on the load, tasks/s does. pgflow's `realtime.send` is a no-op stub " +
    "here (on Supabase it writes a row per state change), which flatters pgflow's figures.",
    "",
    markdownTable(
      [
        "shape",
        "engine, protocol",
        "tasks/s",
        "WAL bytes/task",
        "shared buffer accesses/task",
        "statements/task client + nested",
        "rows updated/task",
        "Lock:object of active",
        "1-min load at each start",
      ],
      rows,
    ),
  ].join("\n"));
}

if (import.meta.main) await main(Deno.args);
