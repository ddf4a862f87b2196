/**
 * `deno task bench:sql_core [--quick] [...]`: throughput and run latency of the SQL core, driven
 * with no-op work. See bench/README.md for what is measured and how.
 *
 * Options:
 *   --quick               smoke run: fewer runs, one repetition
 *   --connections 1,4,8   connection counts to measure
 *   --shape linear3,map100
 *   --mode single,batched completion modes: complete_task per task / complete_tasks per batch
 *   --events on,off       live run events of the benchmarked flows (docs/events.md): measured
 *                         with each value in turn, in one run
 *   --batch 20            messages per pgmq.read
 *   --repetitions 3       timed repetitions per combination (after one untimed warm-up)
 *   --profile             print pg_stat_statements / pg_stat_user_functions per combination
 *                         (throwaway cluster only; the statistics themselves cost some speed)
 *   --migrations DIR      migrate from DIR instead of supabase/migrations (to measure a patch)
 *   --stock-set-immediate keep Deno's setImmediate, which adds ~1.2 ms to every small postgres.js
 *                         write (see _prompt_set_immediate.ts); by default it is replaced
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres, { type Sql } from "postgres";
import { type BenchDatabase, benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import { PROFILE_SETTINGS, profileReport, resetProfile } from "./_pg_profile.ts";
import { usePromptSetImmediate } from "./_prompt_set_immediate.ts";
import {
  type CallType,
  compileWorkload,
  type CompletionMode,
  type Connections,
  openConnections,
  type RepetitionResult,
  runRepetition,
} from "./_sql_core_driver.ts";
import { LINEAR3, MAP100, type Workload } from "./_sql_core_flows.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";

const WORKLOADS: Record<string, Workload> = { linear3: LINEAR3, map100: MAP100 };

/** Runs per repetition: full and `--quick`. */
const RUNS: Record<string, { full: number; quick: number }> = {
  linear3: { full: 500, quick: 60 },
  map100: { full: 20, quick: 3 },
};

const CALL_TYPES: CallType[] = ["start_flow", "read", "start_tasks", "complete"];

interface Combination {
  workload: Workload;
  events: boolean;
  mode: CompletionMode;
  connections: number;
  runs: number;
}

interface Measured extends Combination {
  repetitions: RepetitionResult[];
}

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function list(value: string): string[] {
  return value.split(",").map((item) => item.trim()).filter((item) => item !== "");
}

async function measure(
  db: BenchDatabase,
  admin: Sql,
  combination: Combination,
  repetitions: number,
  batchSize: number,
  profile: boolean,
): Promise<Measured> {
  const { workload, mode, connections, runs } = combination;
  const label = `${workload.shape} ${mode} x${connections} events ${
    combination.events ? "on" : "off"
  }`;
  const results: RepetitionResult[] = [];
  {
    await using conns: Connections = await openConnections(
      db.url,
      connections,
      workload,
      db.local,
    );
    // Untimed: fills the tables like a long-running system's. PL/pgSQL caches each statement's
    // plan per session, so the ones made while the tables were still empty (sequential scans)
    // would stay for the timed repetitions; fresh statistics invalidate them, as autovacuum's
    // analyze would in a real deployment.
    await runRepetition(conns, workload, mode, runs, batchSize);
    await admin`vacuum analyze`;
    if (profile) await resetProfile(admin);
    for (let i = 0; i < repetitions; i++) {
      const result = await runRepetition(conns, workload, mode, runs, batchSize);
      log(
        `${label} #${i + 1}: ${whole(result.tasks / result.wallMs * 1000)} tasks/s ` +
          `(load ${await loadAverage()})`,
      );
      results.push(result);
    }
  }
  if (profile) console.log(`\n### Profile: ${label}\n\n${await profileReport(admin)}\n`);
  return { ...combination, repetitions: results };
}

function resultRow(m: Measured): string[] {
  const rates = m.repetitions.map((r) => r.tasks / r.wallMs * 1000);
  const p50 = median(m.repetitions.map((r) => median(r.latenciesMs)));
  const p95 = median(m.repetitions.map((r) => quantile(r.latenciesMs, 0.95)));
  return [
    m.workload.shape,
    m.events ? "on" : "off",
    m.mode === "single" ? "complete_task" : "complete_tasks",
    String(m.connections),
    `${whole(median(rates))} (${whole(Math.min(...rates))}–${whole(Math.max(...rates))})`,
    `${duration(p50)} / ${duration(p95)}`,
  ];
}

function callRow(m: Measured): string[] {
  const cells = CALL_TYPES.map((type) => {
    const calls = m.repetitions.reduce((sum, r) => sum + r.calls[type].calls, 0);
    const ms = m.repetitions.reduce((sum, r) => sum + r.calls[type].ms, 0);
    return calls === 0
      ? "–"
      : `${(ms / calls).toFixed(2)} × ${whole(calls / m.repetitions.length)}`;
  });
  const tasks = m.repetitions.reduce((sum, r) => sum + r.tasks, 0);
  const serverCpu = m.repetitions.every((r) => r.serverCpuMs !== undefined)
    ? (m.repetitions.reduce((sum, r) => sum + r.serverCpuMs!, 0) / tasks).toFixed(2)
    : "–";
  const clientCpu = (m.repetitions.reduce((sum, r) => sum + r.clientCpuMs, 0) / tasks).toFixed(2);
  return [
    m.workload.shape,
    m.events ? "on" : "off",
    m.mode,
    String(m.connections),
    ...cells,
    serverCpu,
    clientCpu,
  ];
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      connections: { type: "string", default: "1,4,8" },
      shape: { type: "string", default: "linear3,map100" },
      mode: { type: "string", default: "single,batched" },
      events: { type: "string", default: "on" },
      batch: { type: "string", default: "20" },
      repetitions: { type: "string" },
      profile: { type: "boolean", default: false },
      migrations: { type: "string" },
      "stock-set-immediate": { type: "boolean", default: false },
    },
  });
  const connectionCounts = list(values.connections).map(Number);
  const shapes = list(values.shape);
  const modes = list(values.mode);
  const eventSettings = list(values.events).map((value) => {
    if (value !== "on" && value !== "off") {
      throw new Error(`Unknown --events "${value}": on or off`);
    }
    return value === "on";
  });
  const batchSize = Number(values.batch);
  const repetitions = Number(values.repetitions ?? (values.quick ? 1 : 3));
  for (const shape of shapes) {
    if (!(shape in WORKLOADS)) throw new Error(`Unknown --shape "${shape}": linear3 or map100`);
  }
  for (const mode of modes) {
    if (mode !== "single" && mode !== "batched") {
      throw new Error(`Unknown --mode "${mode}": single or batched`);
    }
  }
  if (values.profile && Deno.env.get("DATABASE_URL")) {
    throw new Error("--profile needs the throwaway cluster: unset DATABASE_URL");
  }

  using _prompt = values["stock-set-immediate"] ? undefined : usePromptSetImmediate();
  const loadBefore = await loadAverage();
  await using db = await benchDatabase({
    settings: values.profile ? PROFILE_SETTINGS : {},
    migrations: values.migrations,
  });
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const admin = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const measured: Measured[] = [];
  try {
    for (const shape of shapes) {
      for (const mode of modes) {
        for (const connections of connectionCounts) {
          // On and off back to back, so that both see the same machine load.
          for (const events of eventSettings) {
            await compileWorkload(admin, WORKLOADS[shape], events);
            const runs = RUNS[shape][values.quick ? "quick" : "full"];
            const combination = {
              workload: WORKLOADS[shape],
              events,
              mode: mode as CompletionMode,
              connections,
              runs,
            };
            measured.push(
              await measure(db, admin, combination, repetitions, batchSize, values.profile),
            );
          }
        }
      }
    }
  } finally {
    await admin.end();
  }

  const runsNote = shapes.map((s) => `${s} ${RUNS[s][values.quick ? "quick" : "full"]} runs`);
  console.log([
    "",
    `## SQL core benchmark${values.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}; ${navigator.hardwareConcurrency} CPUs; ` +
    `load average before ${loadBefore}, after ${await loadAverage()}.`,
    `${runsNote.join(", ")}, all started first; read batch ${batchSize}; ` +
    `postgres.js with ${values["stock-set-immediate"] ? "Deno's" : "a prompt"} setImmediate; ` +
    `median of ${repetitions} after one untimed warm-up (min–max).`,
    "",
    markdownTable(
      [
        "shape",
        "events",
        "completion",
        "connections",
        "tasks/s median (min–max)",
        "run latency p50 / p95",
      ],
      measured.map(resultRow),
    ),
    "",
    "Client time per call (mean ms × calls per repetition) and CPU time per task (server: the",
    "connections' backends; client: this process):",
    "",
    markdownTable(
      [
        "shape",
        "events",
        "mode",
        "connections",
        ...CALL_TYPES,
        "server CPU ms/task",
        "client CPU ms/task",
      ],
      measured.map(callRow),
    ),
  ].join("\n"));
}

if (import.meta.main) await main(Deno.args);
