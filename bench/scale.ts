/**
 * `deno task bench:scale [--quick]`: how the cost per task grows with the tables: completed runs
 * retained (history), pruning them (retention), tasks queued (backlog) and the width of a map
 * (fan-out). Each curve is compared with its own smallest point, measured in the same run. See
 * bench/README.md for what is measured and how.
 *
 * Options:
 *   --quick      smoke run: small sizes, one repetition (< 2 min)
 *   --history    retained runs per point, e.g. 0,100000,1000000
 *   --backlog    queued tasks per point, e.g. 0,10000,100000,1000000
 *   --fanout     map widths, e.g. 100,10000,100000
 *   --curves     history,retention,backlog,fanout (retention needs history's largest point)
 *   --migrations DIR  migrate from DIR instead of supabase/migrations (to measure a patch)
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres, { type Sql } from "postgres";
import { pruneCommand } from "../src/cli/commands/prune.ts";
import { type BenchDatabase, benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import { usePromptSetImmediate } from "./_prompt_set_immediate.ts";
import { buildBacklog, buildHistory } from "./_scale_data.ts";
import {
  compileWorkload,
  type Connections,
  drainTasks,
  openConnections,
  type RepetitionResult,
  runRepetition,
} from "./_sql_core_driver.ts";
import { BACKLOG, LINEAR3, MAP100, mapWorkload, PROBE, type Workload } from "./_sql_core_flows.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";

/** Sizes and run counts: full and `--quick`. */
const SIZES = {
  full: {
    history: "0,100000,1000000",
    backlog: "0,10000,100000,1000000",
    fanout: "100,10000,100000",
    runs: { linear3: 500, map100: 50 },
    repetitions: 3,
    drained: 4_000,
    probes: 100,
  },
  quick: {
    history: "0,10000,30000",
    backlog: "0,2000,10000",
    fanout: "100,1000,5000",
    runs: { linear3: 60, map100: 3 },
    repetitions: 1,
    drained: 600,
    probes: 20,
  },
};

/** Connections of the claim+complete throughput: batched completion, as workers report. */
const CONNECTIONS = 4;
const BATCH = 20;
/** Age of the retained history and the retention the prune is given. */
const HISTORY_AGE_DAYS = 30;
const RETENTION = "7 days";

/** The fast step's queue of the backlog flow, probed while its `slow` queue is drained. */
const SLOW: Workload = { ...BACKLOG, leafStep: "slow" };
const FAST: Workload = { ...BACKLOG, queue: "backlog__fast", leafStep: "fast" };
const FANOUT_SLUG = "fanout";
/** Backlog tasks drained untimed before each backlog point. */
const WARM_UP_TASKS = 200;

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function sizes(value: string): number[] {
  return value.split(",").filter((s) => s.trim() !== "").map((s) => Number(s.replaceAll("_", "")));
}

/** Load average (1 minute) now, for the row being measured. */
async function load1(): Promise<string> {
  return (await loadAverage()).split(" ")[0];
}

function perSecond(r: { tasks: number; wallMs: number }): number {
  return r.tasks / r.wallMs * 1000;
}

function serverCpuPerTask(results: { tasks: number; serverCpuMs: number | undefined }[]): number {
  if (results.some((r) => r.serverCpuMs === undefined)) return NaN;
  const tasks = results.reduce((sum, r) => sum + r.tasks, 0);
  return results.reduce((sum, r) => sum + r.serverCpuMs!, 0) / tasks;
}

function ratio(value: number, base: number): string {
  return Number.isFinite(value / base) ? `${(value / base).toFixed(2)}×` : "–";
}

function cpu(ms: number): string {
  return Number.isFinite(ms) ? ms.toFixed(2) : "–";
}

/** A probe's claim: one `pgmq.read` + `sluice.start_tasks` of the one message it waits for. */
async function probeClaims(
  admin: Sql,
  probe: Connections,
  workload: Workload,
  count: number,
  input: postgres.JSONValue,
): Promise<number[]> {
  const claims: number[] = [];
  for (let i = 0; i < count; i++) {
    await admin`select sluice.start_flow(${workload.shape}, ${admin.json(input)}::jsonb)`;
    const result = await drainTasks(probe, workload, "batched", 1, 1, BATCH);
    claims.push(result.calls.read.ms + result.calls.start_tasks.ms);
  }
  return claims;
}

/** Statement-latency percentiles of `start_flow` on one connection; every call is rolled back. */
async function startFlowLatencies(url: string, count: number): Promise<number[]> {
  const sql = postgres(url, { max: 1, prepare: false, onnotice: () => {} });
  const latencies: number[] = [];
  const rollback = new Error("rollback");
  try {
    for (let i = 0; i < count; i++) {
      await sql.begin(async (tx) => {
        const start = performance.now();
        await tx`select sluice.start_flow('linear3', ${tx.json({ n: i })}::jsonb)`;
        latencies.push(performance.now() - start);
        throw rollback;
      }).catch((error) => {
        if (error !== rollback) throw error;
      });
    }
  } finally {
    await sql.end();
  }
  return latencies;
}

interface HistoryPoint {
  retained: number;
  linear3: RepetitionResult[];
  map100: RepetitionResult[];
  startFlow: number[];
  load: string;
}

async function throughput(
  db: BenchDatabase,
  admin: Sql,
  workload: Workload,
  runs: number,
  repetitions: number,
): Promise<RepetitionResult[]> {
  await using conns = await openConnections(db.url, CONNECTIONS, workload, db.local);
  // The untimed warm-up, then fresh statistics (as autovacuum's analyze would take), which also
  // invalidate the plans PL/pgSQL cached meanwhile.
  await runRepetition(conns, workload, "batched", runs, BATCH);
  await admin`analyze`;
  const results: RepetitionResult[] = [];
  for (let i = 0; i < repetitions; i++) {
    results.push(await runRepetition(conns, workload, "batched", runs, BATCH));
  }
  return results;
}

/**
 * `VACUUM (ANALYZE)` after bulk writes: what autovacuum does over the months a real history takes
 * to build up. Without it autovacuum would first visit the freshly built tables while the next
 * point is measured.
 */
async function settle(admin: Sql): Promise<number> {
  const start = performance.now();
  await admin`vacuum (analyze)`;
  const ms = performance.now() - start;
  log(`  vacuum (analyze): ${duration(ms)}`);
  return ms;
}

async function historyCurve(
  db: BenchDatabase,
  admin: Sql,
  points: number[],
  size: typeof SIZES.full,
): Promise<HistoryPoint[]> {
  const measured: HistoryPoint[] = [];
  let retained = 0;
  for (const target of points) {
    log(`history: building ${whole(target - retained)} more completed runs`);
    await buildHistory(admin, LINEAR3.shape, target - retained, HISTORY_AGE_DAYS, log);
    retained = target;
    await settle(admin);
    const linear3 = await throughput(db, admin, LINEAR3, size.runs.linear3, size.repetitions);
    const map100 = await throughput(db, admin, MAP100, size.runs.map100, size.repetitions);
    const startFlow = await startFlowLatencies(db.url, 100);
    const point = { retained, linear3, map100, startFlow, load: await load1() };
    log(
      `history ${whole(retained)}: linear3 ${whole(median(linear3.map(perSecond)))} tasks/s, ` +
        `map100 ${whole(median(map100.map(perSecond)))} tasks/s, start_flow p50 ` +
        `${duration(median(startFlow))} (load ${point.load})`,
    );
    measured.push(point);
  }
  return measured;
}

interface Sizes {
  tableMb: number;
  indexMb: number;
}

/** Heap (with TOAST) and index sizes of the tables that history fills. */
async function historySizes(sql: Sql): Promise<Sizes> {
  const [row] = await sql<Sizes[]>`
    select sum(pg_table_size(c.oid))::float8 / 1048576 as "tableMb",
      sum(pg_indexes_size(c.oid))::float8 / 1048576 as "indexMb"
    from pg_class c
    where c.oid in ('sluice.runs'::regclass, 'sluice.step_states'::regclass,
      'sluice.step_tasks'::regclass, ${`pgmq.a_${LINEAR3.queue}`}::regclass)
  `;
  return row;
}

interface RetentionResult {
  pruned: number;
  pruneMs: number;
  idle: number[];
  during: number[];
  before: Sizes;
  after: Sizes;
  vacuumMs: number;
  afterVacuum: Sizes;
  load: string;
}

async function retention(db: BenchDatabase, admin: Sql, probes: number): Promise<RetentionResult> {
  const [{ old }] = await admin<{ old: number }[]>`
    select count(*)::int as old from sluice.runs
    where status <> 'started' and completed_at < now() - ${RETENTION}::interval
  `;
  const before = await historySizes(admin);
  const probeSql = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  await using probe = await openConnections(db.url, 1, PROBE, db.local);
  try {
    // Warm the probe's plans, then measure it idle.
    await probeClaims(probeSql, probe, PROBE, 5, {});
    const idle = await probeClaims(probeSql, probe, PROBE, probes, {});
    log(`retention: pruning ${whole(old)} runs; probing claims meanwhile`);
    const lines: string[] = [];
    const io = { out: (line: string) => lines.push(line), err: (line: string) => log(line) };
    const startedAt = performance.now();
    let done = false;
    const pruning = pruneCommand.run(
      admin,
      { positional: [RETENTION], json: false, options: {} },
      io,
    )
      .finally(() => done = true);
    const during: number[] = [];
    while (!done) during.push(...await probeClaims(probeSql, probe, PROBE, 1, {}));
    if ((await pruning) !== 0) throw new Error(`prune failed: ${lines.join("\n")}`);
    const pruneMs = performance.now() - startedAt;
    log(`retention: ${lines.join(" ")} in ${duration(pruneMs)}; ${during.length} claims meanwhile`);
    const [{ left }] = await admin<{ left: number }[]>`
      select count(*)::int as left from sluice.runs
      where status <> 'started' and completed_at < now() - ${RETENTION}::interval
    `;
    if (left !== 0) throw new Error(`prune left ${left} old runs`);
    const load = await load1();
    const afterPrune = await historySizes(admin);
    const vacuumMs = await settle(admin);
    return {
      pruned: old,
      pruneMs,
      idle,
      during,
      before,
      after: afterPrune,
      vacuumMs,
      afterVacuum: await historySizes(admin),
      load,
    };
  } finally {
    await probeSql.end();
  }
}

interface BacklogPoint {
  queued: number;
  drain: { tasks: number; wallMs: number; serverCpuMs: number | undefined };
  claims: number[];
  load: string;
}

async function backlogCurve(
  db: BenchDatabase,
  admin: Sql,
  points: number[],
  size: typeof SIZES.full,
): Promise<BacklogPoint[]> {
  const measured: BacklogPoint[] = [];
  for (const target of points) {
    // Every point drains `drained` tasks from the front of a queue holding `target` more.
    const [{ queued }] = await admin<{ queued: number }[]>`
      select count(*)::int as queued from sluice.step_tasks
      where queue_name = ${SLOW.queue} and status = 'queued'
    `;
    // Connections stop after the count is reached, so batches in flight overshoot it: the slack
    // keeps the timed drain from running dry.
    const wanted = target + size.drained + WARM_UP_TASKS + CONNECTIONS * BATCH * 2 - queued;
    log(`backlog: building ${whole(wanted)} queued tasks (${whole(target)} behind the drained)`);
    if (wanted > 0) await buildBacklog(admin, BACKLOG.shape, wanted, log);
    await settle(admin);
    await using conns = await openConnections(db.url, CONNECTIONS, SLOW, db.local);
    await using probe = await openConnections(db.url, 1, FAST, db.local);
    const probeSql = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
    try {
      // Warm-up: plans of every connection, on the same backlog.
      await drainTasks(conns, SLOW, "batched", WARM_UP_TASKS, WARM_UP_TASKS, BATCH);
      await probeClaims(probeSql, probe, FAST, 3, {});
      let draining = true;
      const drain = drainTasks(conns, SLOW, "batched", size.drained, size.drained, BATCH)
        .finally(() => draining = false);
      const claims: number[] = [];
      while (draining) claims.push(...await probeClaims(probeSql, probe, FAST, 1, {}));
      const result = await drain;
      const point = { queued: target, drain: result, claims, load: await load1() };
      log(
        `backlog ${whole(target)}: ${whole(perSecond(result))} tasks/s, fast claim p50 ` +
          `${duration(median(claims))} (load ${point.load})`,
      );
      measured.push(point);
    } finally {
      await probeSql.end();
    }
  }
  return measured;
}

interface FanoutPoint {
  width: number;
  startMs: number;
  drainMs: number;
  drainCpuMs: number | undefined;
  aggregateMs: number;
  medianCompleteMs: number;
  peakBackendMb: number;
  peakClientMb: number;
  load: string;
}

/** Resident memory in MiB of the largest of `pids` (server backends), from /proc. */
async function backendRssMb(pids: number[]): Promise<number> {
  let max = 0;
  for (const pid of pids) {
    const status = await Deno.readTextFile(`/proc/${pid}/status`).catch(() => "");
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    max = Math.max(max, kb / 1024);
  }
  return max;
}

async function fanoutCurve(
  db: BenchDatabase,
  admin: Sql,
  widths: number[],
): Promise<FanoutPoint[]> {
  const measured: FanoutPoint[] = [];
  for (const width of widths) {
    const workload = mapWorkload(FANOUT_SLUG, width);
    await using conns = await openConnections(db.url, CONNECTIONS, workload, db.local);
    const pids = conns.list.flatMap((c) => c.backendPid ?? []);
    let peakBackendMb = 0;
    let peakClientMb = 0;
    const sample = async () => {
      peakBackendMb = Math.max(peakBackendMb, await backendRssMb(pids));
      peakClientMb = Math.max(peakClientMb, Deno.memoryUsage().rss / 1048576);
    };
    const sampler = setInterval(sample, 25);
    try {
      log(`fan-out ${whole(width)}: starting the run`);
      await admin`select sluice.start_flow(${FANOUT_SLUG}, '{}'::jsonb)`;
      // The fan task's completion creates the map's tasks and messages.
      let startMs = 0;
      const first: Connections = { ...conns, list: conns.list.slice(0, 1) };
      await drainTasks(first, { ...workload, leafStep: "fan" }, "batched", 1, 1, BATCH, (_, ms) => {
        startMs = ms;
      });
      log(`fan-out ${whole(width)}: map started in ${duration(startMs)}; draining`);
      let eachDone = 0;
      let aggregateMs = 0;
      const completions: number[] = [];
      const drain = await drainTasks(
        conns,
        workload,
        "batched",
        1,
        width + 1,
        BATCH,
        (results, ms) => {
          const each = results.filter((r) => r.step_slug === "each").length;
          if (each === 0) return;
          eachDone += each;
          completions.push(ms);
          // The completion of the last map task aggregates the map's output and starts `sum`.
          if (eachDone === width) aggregateMs = ms;
        },
      );
      await sample();
      const point = {
        width,
        startMs,
        drainMs: drain.wallMs,
        drainCpuMs: drain.serverCpuMs,
        aggregateMs,
        medianCompleteMs: median(completions),
        peakBackendMb,
        peakClientMb,
        load: await load1(),
      };
      log(
        `fan-out ${whole(width)}: ${(drain.wallMs / width).toFixed(3)} ms/task, aggregation ` +
          `${duration(aggregateMs)} (load ${point.load})`,
      );
      measured.push(point);
    } finally {
      clearInterval(sampler);
    }
  }
  return measured;
}

function historyTable(points: HistoryPoint[]): string {
  const base = points[0];
  const rows = points.map((p) => {
    const l3 = median(p.linear3.map(perSecond));
    const m = median(p.map100.map(perSecond));
    return [
      whole(p.retained),
      whole(l3),
      ratio(median(base.linear3.map(perSecond)), l3),
      cpu(serverCpuPerTask(p.linear3)),
      whole(m),
      ratio(median(base.map100.map(perSecond)), m),
      cpu(serverCpuPerTask(p.map100)),
      `${duration(median(p.startFlow))} / ${duration(quantile(p.startFlow, 0.95))}`,
      p.load,
    ];
  });
  return markdownTable([
    "completed runs retained",
    "linear3 tasks/s",
    "per-task cost vs first",
    "server CPU ms/task",
    "map100 tasks/s",
    "per-task cost vs first",
    "server CPU ms/task",
    "start_flow p50 / p95",
    "load (1 min)",
  ], rows);
}

function retentionTable(r: RetentionResult): string {
  const size = (s: Sizes) => `${whole(s.tableMb)} MB / ${whole(s.indexMb)} MB`;
  return markdownTable(
    [
      "runs pruned",
      "prune time",
      "claim p50 idle / during",
      "claim p95 idle / during",
      "p95 during vs idle",
      "claims during",
      "tables / indexes before",
      "after",
      "vacuum after / sizes then",
      "load (1 min)",
    ],
    [[
      whole(r.pruned),
      duration(r.pruneMs),
      `${duration(median(r.idle))} / ${duration(median(r.during))}`,
      `${duration(quantile(r.idle, 0.95))} / ${duration(quantile(r.during, 0.95))}`,
      ratio(quantile(r.during, 0.95), quantile(r.idle, 0.95)),
      String(r.during.length),
      size(r.before),
      size(r.after),
      `${duration(r.vacuumMs)} / ${size(r.afterVacuum)}`,
      r.load,
    ]],
  );
}

function backlogTable(points: BacklogPoint[]): string {
  const base = points[0];
  return markdownTable(
    [
      "tasks queued behind",
      "drain tasks/s",
      "per-task cost vs first",
      "server CPU ms/task",
      "fast step claim p50 / p95",
      "p95 vs first",
      "claims",
      "load (1 min)",
    ],
    points.map((p) => [
      whole(p.queued),
      whole(perSecond(p.drain)),
      ratio(perSecond(base.drain), perSecond(p.drain)),
      cpu(serverCpuPerTask([p.drain])),
      `${duration(median(p.claims))} / ${duration(quantile(p.claims, 0.95))}`,
      ratio(quantile(p.claims, 0.95), quantile(base.claims, 0.95)),
      String(p.claims.length),
      p.load,
    ]),
  );
}

function fanoutTable(points: FanoutPoint[]): string {
  const base = points[0];
  const perTask = (p: FanoutPoint) => p.drainMs / p.width;
  return markdownTable(
    [
      "map width",
      "map start",
      "tasks created/s",
      "drain ms/task",
      "vs first",
      "server CPU ms/task",
      "aggregation (last completion) / median completion",
      "peak backend / worker RSS",
      "load (1 min)",
    ],
    points.map((p) => [
      whole(p.width),
      duration(p.startMs),
      whole(p.width / p.startMs * 1000),
      perTask(p).toFixed(3),
      ratio(perTask(p), perTask(base)),
      p.drainCpuMs === undefined ? "–" : cpu(p.drainCpuMs / p.width),
      `${duration(p.aggregateMs)} / ${duration(p.medianCompleteMs)}`,
      `${whole(p.peakBackendMb)} MB / ${whole(p.peakClientMb)} MB`,
      p.load,
    ]),
  );
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      history: { type: "string" },
      backlog: { type: "string" },
      fanout: { type: "string" },
      curves: { type: "string", default: "history,retention,backlog,fanout" },
      migrations: { type: "string" },
    },
  });
  const size = SIZES[values.quick ? "quick" : "full"];
  const curves = new Set(values.curves.split(","));
  for (const curve of curves) {
    if (!["history", "retention", "backlog", "fanout"].includes(curve)) {
      throw new Error(`Unknown curve "${curve}" in --curves: history, retention, backlog, fanout`);
    }
  }
  if (curves.has("retention") && !curves.has("history")) {
    throw new Error("Cannot measure retention without history: it prunes history's runs");
  }
  const historyPoints = sizes(values.history ?? size.history);
  const backlogPoints = sizes(values.backlog ?? size.backlog);
  const widths = sizes(values.fanout ?? size.fanout);

  using _prompt = usePromptSetImmediate();
  const loadBefore = await loadAverage();
  const startedAt = performance.now();
  await using db = await benchDatabase({ migrations: values.migrations });
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const admin = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const sections: string[] = [];
  try {
    for (const workload of [LINEAR3, MAP100, BACKLOG, PROBE]) {
      await compileWorkload(admin, workload);
    }
    await compileWorkload(admin, mapWorkload(FANOUT_SLUG, 1));
    if (curves.has("history")) {
      const points = await historyCurve(db, admin, historyPoints, size);
      sections.push(
        "### History: claim+complete throughput with completed runs retained",
        "",
        historyTable(points),
      );
      if (curves.has("retention")) {
        const r = await retention(db, admin, size.probes);
        sections.push("", "### Retention: prune", "", retentionTable(r));
      }
    }
    if (curves.has("backlog")) {
      const points = await backlogCurve(db, admin, backlogPoints, size);
      sections.push(
        "",
        "### Backlog: drain throughput with tasks queued",
        "",
        backlogTable(points),
      );
    }
    if (curves.has("fanout")) {
      const points = await fanoutCurve(db, admin, widths);
      sections.push("", "### Fan-out: one run with a map", "", fanoutTable(points));
    }
  } finally {
    await admin.end();
  }
  console.log([
    "",
    `## Scale benchmark${values.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}; ${navigator.hardwareConcurrency} CPUs; ` +
    `load average before ${loadBefore}, after ${await loadAverage()}; ` +
    `${((performance.now() - startedAt) / 60_000).toFixed(1)} min.`,
    `Throughput: ${CONNECTIONS} connections, read batch ${BATCH}, complete_tasks per batch; ` +
    `history: linear3 ${size.runs.linear3} runs, map100 ${size.runs.map100} runs, median of ` +
    `${size.repetitions} after a warm-up and ANALYZE; backlog: ${size.drained} tasks drained ` +
    `per point, fast-step probes one after another meanwhile.`,
    "",
    ...sections,
  ].join("\n"));
}

if (import.meta.main) await main(Deno.args);
