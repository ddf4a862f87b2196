/**
 * `deno task bench:sql_core [--quick] [...]`: throughput and run latency of the SQL core, driven
 * with no-op work. See bench/README.md for what is measured and how.
 *
 * Options:
 *   --quick               smoke run: fewer runs, one repetition
 *   --cost                the cost mode instead of the throughput matrix: per shape, WAL bytes,
 *                         shared buffer accesses, statements and rows updated per task, plus raw
 *                         PGMQ read+archive as a reference row (throwaway cluster only)
 *   --connections 1,4,8   connection counts to measure
 *   --shape linear3,map100 (also wide10, and subflow3: linear3 with a subflow in the middle,
 *                         batched mode only)
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
import { LINEAR3, MAP100, SUBFLOW3, WIDE10, type Workload } from "./_sql_core_flows.ts";
import { type Cost, costMark, costSince } from "./_cost.ts";
import { drainRawQueue, dropRawQueue, fillRawQueue } from "./_raw_pgmq.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";

const WORKLOADS: Record<string, Workload> = {
  linear3: LINEAR3,
  map100: MAP100,
  wide10: WIDE10,
  subflow3: SUBFLOW3,
};

/** Runs per repetition: full and `--quick`. */
const RUNS: Record<string, { full: number; quick: number }> = {
  linear3: { full: 500, quick: 60 },
  map100: { full: 20, quick: 3 },
  wide10: { full: 200, quick: 25 },
  subflow3: { full: 500, quick: 60 },
};

/** Messages of the raw PGMQ reference: full and `--quick`. */
const RAW_MESSAGES = { full: 10_000, quick: 2_000 };

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

/** One combination of the cost mode: a repetition's cost and throughput each. */
interface CostMeasured {
  label: string[];
  /** Tasks (messages for the raw PGMQ row) per repetition. */
  units: number;
  costs: Cost[];
  rates: number[];
}

function spread(values: number[], digits = 0): string {
  const format = (v: number) => digits === 0 ? whole(v) : v.toFixed(digits);
  const low = Math.min(...values);
  const high = Math.max(...values);
  return low === high || values.length === 1
    ? format(median(values))
    : `${format(median(values))} (${format(low)}–${format(high)})`;
}

function costRow(m: CostMeasured, rawRate: number | undefined): string[] {
  const per = (pick: (c: Cost) => number) => m.costs.map((c) => pick(c) / m.units);
  return [
    ...m.label,
    spread(per((c) => c.walBytes)),
    spread(per((c) => c.bufferAccesses)),
    `${spread(per((c) => c.clientStatements), 2)} + ${spread(per((c) => c.nestedStatements), 1)}`,
    spread(per((c) => c.plans), 1),
    spread(per((c) => c.rowsUpdated), 2),
    spread(m.costs.map((c) => c.rowsUpdated === 0 ? 0 : c.hotUpdated / c.rowsUpdated * 100)) +
    " %",
    String(Math.max(...m.costs.map((c) => c.fpi))),
    spread(m.rates),
    rawRate === undefined ? "–" : `${whole(median(m.rates) / rawRate * 100)} %`,
  ];
}

/**
 * The cost mode: per shape, completion mode and events setting, one untimed warm-up, then per
 * repetition a reset of the statistics, the runs on fresh connections, and the cost divided by
 * the tasks. The raw PGMQ reference is measured first, the same way.
 */
async function costMain(options: {
  shapes: string[];
  modes: CompletionMode[];
  connections: number;
  events: boolean[];
  repetitions: number;
  batchSize: number;
  quick: boolean;
  migrations: string | undefined;
  topNested: boolean;
}): Promise<void> {
  const loadBefore = await loadAverage();
  await using db = await benchDatabase({
    // Autovacuum off: its WAL and buffer accesses would land in whichever repetition it ran
    // during. The explicit vacuum after the warm-up cleans the warm-up's dead rows.
    settings: { ...PROFILE_SETTINGS, autovacuum: "off" },
    migrations: options.migrations,
  });
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const admin = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const measured: CostMeasured[] = [];
  const nestedReports: string[] = [];
  let raw: CostMeasured;
  try {
    const messages = RAW_MESSAGES[options.quick ? "quick" : "full"];
    raw = {
      label: ["raw PGMQ read + archive", "–", "–"],
      units: messages,
      costs: [],
      rates: [],
    };
    for (let i = 0; i < options.repetitions; i++) {
      await fillRawQueue(admin, messages);
      await admin`vacuum analyze`;
      const mark = await costMark(admin);
      const result = await drainRawQueue(db.url, messages, options.connections, options.batchSize);
      raw.costs.push(await costSince(admin, mark));
      raw.rates.push(result.messages / result.wallMs * 1000);
      await dropRawQueue(admin);
      log(
        `raw PGMQ #${i + 1}: ${whole(raw.rates.at(-1)!)} messages/s (load ${await loadAverage()})`,
      );
    }
    for (const shape of options.shapes) {
      const workload = WORKLOADS[shape];
      const runs = RUNS[shape][options.quick ? "quick" : "full"];
      for (const mode of options.modes) {
        // complete_task takes no wait parameters: a subflow shape runs batched only.
        if (mode === "single" && workload.waits !== undefined) continue;
        for (const events of options.events) {
          await compileWorkload(admin, workload, events);
          const label = [shape, mode === "single" ? "complete_task" : "complete_tasks"];
          const m: CostMeasured = {
            label: [...label, events ? "on" : "off"],
            units: runs * workload.tasksPerRun,
            costs: [],
            rates: [],
          };
          {
            await using conns = await openConnections(db.url, options.connections, workload, false);
            await runRepetition(conns, workload, mode, runs, options.batchSize);
          }
          await admin`vacuum analyze`;
          for (let i = 0; i < options.repetitions; i++) {
            const mark = await costMark(admin);
            let result: RepetitionResult;
            {
              await using conns = await openConnections(
                db.url,
                options.connections,
                workload,
                false,
              );
              result = await runRepetition(conns, workload, mode, runs, options.batchSize);
            }
            const cost = await costSince(admin, mark);
            m.costs.push(cost);
            m.rates.push(result.tasks / result.wallMs * 1000);
            log(
              `${m.label.join(" ")} #${i + 1}: ${whole(cost.walBytes / m.units)} WAL bytes/task, ` +
                `${whole(m.rates.at(-1)!)} tasks/s (load ${await loadAverage()})`,
            );
            // Vacuumed between repetitions, so that each starts from the same state.
            await admin`vacuum analyze`;
          }
          measured.push(m);
          if (options.topNested) {
            const last = m.costs.at(-1)!;
            nestedReports.push(
              `Nested statements per task, ${m.label.join(" ")}:\n\n` +
                markdownTable(
                  ["per task", "statement"],
                  last.topNested.map((s) => [
                    (s.calls / m.units).toFixed(2),
                    `\`${s.query.slice(0, 120).replaceAll("|", "\\|")}\``,
                  ]),
                ),
            );
          }
        }
      }
    }
  } finally {
    await admin.end();
  }
  const rawRate = median(raw.rates);
  const runsNote = options.shapes.map((s) =>
    `${s} ${RUNS[s][options.quick ? "quick" : "full"]} runs`
  );
  console.log([
    "",
    `## SQL core cost per task${options.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}; autovacuum off; ${navigator.hardwareConcurrency} CPUs; ` +
    `load average before ${loadBefore}, after ${await loadAverage()}.`,
    `${runsNote.join(", ")}, raw PGMQ ${raw.units} messages; ${options.connections} connections, ` +
    `read batch ${options.batchSize}; median of ${options.repetitions} repetitions (min–max), ` +
    "each after a vacuum; the cost columns hardly depend on the load, tasks/s does.",
    "",
    markdownTable(
      [
        "shape",
        "completion",
        "events",
        "WAL bytes/task",
        "shared buffer accesses/task",
        "statements/task client + nested",
        "plans/task",
        "rows updated/task",
        "of them HOT",
        "FPI",
        "tasks/s",
        "of raw PGMQ",
      ],
      [...measured.map((m) => costRow(m, rawRate)), costRow(raw, undefined)],
    ),
    ...nestedReports.flatMap((report) => ["", report]),
  ].join("\n"));
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      cost: { type: "boolean", default: false },
      "top-nested": { type: "boolean", default: false },
      connections: { type: "string" },
      shape: { type: "string" },
      mode: { type: "string", default: "single,batched" },
      events: { type: "string", default: "on" },
      batch: { type: "string", default: "20" },
      repetitions: { type: "string" },
      profile: { type: "boolean", default: false },
      migrations: { type: "string" },
      "stock-set-immediate": { type: "boolean", default: false },
    },
  });
  const connectionCounts = list(values.connections ?? (values.cost ? "4" : "1,4,8")).map(Number);
  const shapes = list(values.shape ?? (values.cost ? "linear3,map100,wide10" : "linear3,map100"));
  const modes = list(values.mode);
  const eventSettings = list(values.events).map((value) => {
    if (value !== "on" && value !== "off") {
      throw new Error(`Unknown --events "${value}": on or off`);
    }
    return value === "on";
  });
  const batchSize = Number(values.batch);
  const repetitions = Number(values.repetitions ?? (values.quick ? 1 : values.cost ? 2 : 3));
  for (const shape of shapes) {
    if (!(shape in WORKLOADS)) {
      throw new Error(`Unknown --shape "${shape}": ${Object.keys(WORKLOADS).join(", ")}`);
    }
  }
  for (const mode of modes) {
    if (mode !== "single" && mode !== "batched") {
      throw new Error(`Unknown --mode "${mode}": single or batched`);
    }
  }
  if ((values.profile || values.cost) && Deno.env.get("DATABASE_URL")) {
    throw new Error("--profile and --cost need the throwaway cluster: unset DATABASE_URL");
  }

  using _prompt = values["stock-set-immediate"] ? undefined : usePromptSetImmediate();
  if (values.cost) {
    if (connectionCounts.length !== 1) {
      throw new Error(
        `--cost measures one connection count, got --connections ${values.connections}`,
      );
    }
    await costMain({
      shapes,
      modes: modes as CompletionMode[],
      connections: connectionCounts[0],
      events: eventSettings,
      repetitions,
      batchSize,
      quick: values.quick,
      migrations: values.migrations,
      topNested: values["top-nested"],
    });
    return;
  }
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
        if (mode === "single" && WORKLOADS[shape].waits !== undefined) continue;
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
