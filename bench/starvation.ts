/**
 * `deno task bench:starvation [--quick] [...]`: how long a fast step waits in its queue behind a
 * backlog of a slow step, as a plain flow (one queue) and with `withStepQueues()` (one queue per
 * step). See bench/README.md for what is measured and how.
 *
 * Options:
 *   --quick            smoke run: a flood of 400 runs, 20 probes
 *   --flood 2000       runs started before the probes
 *   --probes 50        probe runs, one every --interval ms
 *   --interval 100     ms between two probe starts
 *   --slow-ms 200      duration of the slow step's handler
 *   --flood-with-fast  flood runs run the fast step too (by default their input skips it, so the
 *                      backlog is the slow step's alone)
 *   --modes plain,steps
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster.
 *
 * @module
 */
import { parseArgs } from "node:util";
import type { Sql } from "postgres";
import { connect } from "../src/db/connect.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { Flow } from "../src/dsl/flow.ts";
import { withStepQueues } from "../src/dsl/step_queues.ts";
import type { DeployableFlow } from "../src/dsl/types.ts";
import { startWorker, type WorkerHandle } from "../src/worker/mod.ts";
import { resolveWorkerTarget } from "../src/admin/mod.ts";
import { benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";

/**
 * Untimed runs of both steps before the idle phase, followed by `vacuum analyze`: PL/pgSQL caches
 * each statement's plan per session, and plans made while the tables were still empty (sequential
 * scans) would make the timed flood quadratic; fresh statistics replace them, as autovacuum's
 * analyze would in a real deployment.
 */
const WARM_UP_RUNS = 200;
const MAX_CONCURRENT = 10;

type ModeName = "plain" | "steps";

interface Settings {
  readonly flood: number;
  readonly probes: number;
  readonly intervalMs: number;
  readonly slowMs: number;
  readonly floodWithFast: boolean;
}

/** A flow under test and the workers serving it. */
interface Mode {
  readonly name: ModeName;
  readonly label: string;
  readonly workers: string;
  readonly flow: DeployableFlow;
  readonly slug: string;
  /** The queue the fast step's tasks wait in. */
  readonly fastQueue: string;
  /** The queue the slow step's tasks wait in. */
  readonly slowQueue: string;
  start(url: string): Promise<WorkerHandle[]>;
}

/** One phase's probes: the fast step's queue wait per probe run, in milliseconds. */
interface PhaseResult {
  readonly waitsMs: number[];
  /** Messages in the fast step's queue when the first probe started. */
  readonly backlog: number;
  /** Messages in the slow step's queue once the last probe had started. */
  readonly slowBacklogAtEnd: number;
  /** The 1-minute load average at the end of the phase. */
  readonly load: string;
}

interface ModeResult {
  readonly mode: Mode;
  readonly idle: PhaseResult;
  readonly flooded: PhaseResult;
  /** How long starting the flood took. */
  readonly floodMs: number;
}

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable to the server's `now()`. */
function clock(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The flow: two independent root steps. `fast` runs for inputs with `fast: true` (a flood without
 * it is a backlog of the slow step alone) and records when its handler starts for probe runs,
 * keyed by run id.
 */
function starvationFlow(slug: string, slowMs: number, handlerStarts: Map<string, number>) {
  return new Flow<{ probe: boolean; fast: boolean }>({ slug, timeout: 60 })
    .step({ slug: "slow" }, async () => {
      await sleep(slowMs);
      return true;
    })
    .step({ slug: "fast", if: { fast: true } }, (input, context) => {
      if (input.probe) handlerStarts.set(context.runId, clock());
      return true;
    });
}

function modes(slowMs: number, handlerStarts: Map<string, number>): Mode[] {
  const workerOptions = (url: string) => ({
    connectionString: url,
    maxConcurrent: MAX_CONCURRENT,
    logLevel: "warn" as const,
    env: {},
  });
  const plain = starvationFlow("starvation_plain", slowMs, handlerStarts);
  const steps = withStepQueues(starvationFlow("starvation_steps", slowMs, handlerStarts));
  return [
    {
      name: "plain",
      label: "plain flow (one queue)",
      workers: `4 × ${MAX_CONCURRENT}`,
      flow: plain,
      slug: plain.slug,
      fastQueue: resolveWorkerTarget(plain).queueName,
      slowQueue: resolveWorkerTarget(plain).queueName,
      async start(url) {
        const workers: WorkerHandle[] = [];
        for (let i = 0; i < 4; i++) workers.push(await startWorker(plain, workerOptions(url)));
        return workers;
      },
    },
    {
      name: "steps",
      label: "withStepQueues (a queue per step)",
      workers: `2 × ${MAX_CONCURRENT} per step`,
      flow: steps,
      slug: steps.flow.slug,
      fastQueue: resolveWorkerTarget(steps, { stepSlug: "fast" }).queueName,
      slowQueue: resolveWorkerTarget(steps, { stepSlug: "slow" }).queueName,
      async start(url) {
        const workers: WorkerHandle[] = [];
        for (const stepSlug of ["slow", "fast", "slow", "fast"] as const) {
          workers.push(await startWorker(steps, { ...workerOptions(url), stepSlug }));
        }
        return workers;
      },
    },
  ];
}

async function queueLength(sql: Sql, queue: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select queue_length::int as n from pgmq.metrics(${queue})`;
  return row.n;
}

/** Waits until no run of the flow is unfinished (the backlog has drained). */
async function drained(sql: Sql, slug: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from sluice.runs where flow_slug = ${slug} and status <> 'completed'`;
    if (row.n === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`${row.n} runs of ${slug} still unfinished after ${timeoutMs} ms`);
    }
    await sleep(250);
  }
}

/**
 * Starts `probes` runs one every `intervalMs`, waits until each one's fast task has completed,
 * and returns each one's queue wait: the fast handler's start minus the task's `queued_at`.
 */
async function probe(
  sql: Sql,
  mode: Mode,
  handlerStarts: Map<string, number>,
  probes: number,
  intervalMs: number,
): Promise<PhaseResult> {
  const backlog = await queueLength(sql, mode.fastQueue);
  const runIds: string[] = [];
  const first = clock();
  for (let i = 0; i < probes; i++) {
    // A fixed schedule: a slow start_flow does not push the later probes back.
    await sleep(Math.max(0, first + i * intervalMs - clock()));
    runIds.push(await startFlow(sql, mode.flow, { probe: true, fast: true }));
  }
  const slowBacklogAtEnd = await queueLength(sql, mode.slowQueue);
  const deadline = Date.now() + 600_000;
  while (runIds.some((runId) => !handlerStarts.has(runId))) {
    if (Date.now() > deadline) throw new Error(`probes of ${mode.slug} did not run in 10 min`);
    await sleep(50);
  }
  const rows = await sql<{ run_id: string; queued_ms: number }[]>`
    select run_id::text, (extract(epoch from queued_at) * 1000)::float8 as queued_ms
    from sluice.step_tasks where run_id = any(${runIds}::uuid[]) and step_slug = 'fast'`;
  const waitsMs = rows.map((row) => handlerStarts.get(row.run_id)! - row.queued_ms);
  return { waitsMs, backlog, slowBacklogAtEnd, load: (await loadAverage()).split(" ")[0] };
}

/**
 * Starts `runs` runs in one statement, so in one transaction: the whole backlog becomes visible at
 * once, at its commit, and the workers cannot work it off while it is being created.
 */
async function flood(sql: Sql, slug: string, runs: number, withFast: boolean): Promise<number> {
  // Sent as text: postgres.js would send a string cast to jsonb as a JSON string.
  const input = JSON.stringify({ probe: false, fast: withFast });
  const began = clock();
  await sql`
    select count(sluice.start_flow(${slug}, ${input}::text::jsonb))
    from generate_series(1, ${runs})`;
  return clock() - began;
}

async function measure(
  url: string,
  sql: Sql,
  mode: Mode,
  handlerStarts: Map<string, number>,
  settings: Settings,
): Promise<ModeResult> {
  const workers = await mode.start(url);
  try {
    await flood(sql, mode.slug, WARM_UP_RUNS, true);
    await drained(sql, mode.slug, 120_000);
    await sql`vacuum analyze`;

    log(`${mode.name}: idle, ${settings.probes} probes (load ${await loadAverage()})`);
    const idle = await probe(sql, mode, handlerStarts, settings.probes, settings.intervalMs);
    await drained(sql, mode.slug, 60_000);

    log(`${mode.name}: flooding with ${whole(settings.flood)} runs`);
    const floodMs = await flood(sql, mode.slug, settings.flood, settings.floodWithFast);
    log(`${mode.name}: flooded in ${duration(floodMs)}, ${settings.probes} probes`);
    const flooded = await probe(sql, mode, handlerStarts, settings.probes, settings.intervalMs);
    // Slots of the slowest pool: 20 (steps) or 40 (plain, shared with the fast tasks).
    const backlogMs = settings.flood * settings.slowMs / (2 * MAX_CONCURRENT);
    log(`${mode.name}: measured; waiting for the backlog to drain (load ${await loadAverage()})`);
    await drained(sql, mode.slug, 3 * backlogMs + 120_000);
    return { mode, idle, flooded, floodMs };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
}

function ratio(flooded: number, idle: number): string {
  return `${(flooded / idle).toFixed(flooded / idle < 10 ? 2 : 0)}×`;
}

function row(result: ModeResult): string[] {
  const { idle, flooded } = result;
  const idleP50 = median(idle.waitsMs);
  const idleP95 = quantile(idle.waitsMs, 0.95);
  const floodedP50 = median(flooded.waitsMs);
  const floodedP95 = quantile(flooded.waitsMs, 0.95);
  return [
    result.mode.label,
    result.mode.workers,
    duration(idleP50),
    duration(idleP95),
    duration(floodedP50),
    duration(floodedP95),
    ratio(floodedP50, idleP50),
    ratio(floodedP95, idleP95),
    `${whole(flooded.backlog)} / ${whole(flooded.slowBacklogAtEnd)}`,
    `${idle.load} / ${flooded.load}`,
  ];
}

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      flood: { type: "string" },
      probes: { type: "string" },
      interval: { type: "string", default: "100" },
      "slow-ms": { type: "string", default: "200" },
      "flood-with-fast": { type: "boolean", default: false },
      modes: { type: "string", default: "plain,steps" },
    },
  });
  const counts = {
    flood: Number(values.flood ?? (values.quick ? 400 : 2000)),
    probes: Number(values.probes ?? (values.quick ? 20 : 50)),
    interval: Number(values.interval),
    "slow-ms": Number(values["slow-ms"]),
  };
  for (const [name, value] of Object.entries(counts)) {
    if (!Number.isFinite(value) || value < 1) throw new Error(`--${name} must be >= 1`);
  }
  const settings: Settings = {
    flood: counts.flood,
    probes: counts.probes,
    intervalMs: counts.interval,
    slowMs: counts["slow-ms"],
    floodWithFast: values["flood-with-fast"],
  };
  const handlerStarts = new Map<string, number>();
  const selected = values.modes.split(",").map((name) => name.trim());
  const chosen = modes(settings.slowMs, handlerStarts).filter((mode) =>
    selected.includes(mode.name)
  );
  if (chosen.length !== selected.length) {
    throw new Error(`Unknown --modes "${values.modes}": plain, steps or both`);
  }

  const loadBefore = await loadAverage();
  await using db = await benchDatabase();
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const sql = connect(db.url, { max: 4 });
  const results: ModeResult[] = [];
  try {
    for (const mode of chosen) {
      results.push(await measure(db.url, sql, mode, handlerStarts, settings));
    }
  } finally {
    await sql.end();
  }

  const steps = results.find((result) => result.mode.name === "steps");
  const target = steps === undefined ? null : quantile(steps.flooded.waitsMs, 0.95) /
    quantile(steps.idle.waitsMs, 0.95);
  console.log([
    "",
    `## Starvation benchmark${values.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}; ${navigator.hardwareConcurrency} CPUs; load average ` +
    `before ${loadBefore}, after ${await loadAverage()}.`,
    `One flow, two independent root steps: \`slow\` (${settings.slowMs} ms) and \`fast\` ` +
    `(no-op). Flood: ${whole(settings.flood)} runs ${
      settings.floodWithFast ? "of both steps" : "whose input skips `fast` (a slow backlog)"
    } (${
      results.map((r) => `${r.mode.name} started in ${duration(r.floodMs)}`).join(", ")
    }); then ${settings.probes} probe runs, one every ${settings.intervalMs} ms, each mode ` +
    "against its own idle baseline (the same probes without the flood).",
    "Wait = the fast handler's start (worker clock) minus the fast task's `step_tasks.queued_at`.",
    "",
    markdownTable(
      [
        "mode",
        "workers",
        "idle median",
        "idle p95",
        "flooded median",
        "flooded p95",
        "median ratio",
        "p95 ratio",
        "flooded backlog: fast queue at first probe / slow queue at last probe",
        "load (1 min) idle / flooded",
      ],
      results.map(row),
    ),
    "",
    target === null
      ? "Target not evaluated (the steps mode was not run)."
      : `Target: with step queues, flooded p95 <= 1.5 × idle p95: ${target.toFixed(2)}× — ${
        target <= 1.5 ? "met" : "NOT met"
      }.`,
  ].join("\n"));
}

if (import.meta.main) await main(Deno.args);
