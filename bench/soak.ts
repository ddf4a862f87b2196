/**
 * `deno task bench:soak [--quick] [...]`: a fixed offered load of linear3 runs through real
 * `startWorker` workers for a long time — a clean phase, then an idle-in-transaction session
 * holding an xid (autovacuum cannot remove what it could still see), then recovery — with one line
 * per interval: throughput, run latency, dead tuples and sizes of every sluice and PGMQ table, the
 * load. Ends with the targets (issue 31, "a soak that stays flat"), each met or not with
 * its figures. See bench/README.md.
 *
 * Options:
 *   --quick                 smoke run: 3 minutes in 20 s intervals, hold from minute 1 for 1
 *   --minutes 30            length of the soak
 *   --rate 100              runs started per second (offered load, open loop)
 *   --hold-at 20            minute the held xid begins (the clean phase is before it)
 *   --hold-minutes 5        minutes it is held; the rest is recovery
 *   --interval 60           seconds per reported interval
 *   --workers 2             workers (in this process, each with its own pool of 4 connections)
 *   --concurrency 10        maxConcurrent of every worker
 *   --retention-minutes 2   finished runs are pruned (`sluice.prune_data_older_than`) after each
 *                           interval once older than this, as a deployment prunes its history;
 *                           0 never prunes
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster. Ctrl-C stops early and still releases the held session, stops the workers and
 * drops the database.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres, { type Sql } from "postgres";
import { startFlow } from "../src/client/start_flow.ts";
import { pruneDataOlderThan } from "../src/db/ops_queries.ts";
import { benchDatabase } from "./_bench_database.ts";
import { loadAverage } from "./_machine.ts";
import {
  cleanGrowth,
  evaluateTargets,
  type IntervalSample,
  phaseOf,
  SoakOptionError,
  type SoakPlan,
  soakPlan,
  type TableSample,
} from "./_soak_targets.ts";
import { bytes, duration, markdownTable, whole } from "./_stats.ts";
import { startWorkers, type WorkerPool } from "./_worker_driver.ts";
import { linear3, type WorkerWorkload } from "./_worker_flows.ts";

/** The producer never has more than this many seconds of load waiting for `startFlow`. */
const MAX_IN_FLIGHT_SECONDS = 5;
/** How often the producer tops up to the offered rate. */
const PRODUCER_TICK_MS = 10;
/** After the last interval, how long the workers may take to finish the runs still open. */
const DRAIN_TIMEOUT_MS = 60_000;
/** Tables in each interval's summary, biggest first. */
const BIGGEST = 3;

function log(message: string): void {
  console.error(`bench: ${message}`);
}

/**
 * Starts runs at a fixed rate whatever the workers do (an open loop): at every tick it starts as
 * many runs as the elapsed time calls for, unless {@linkcode MAX_IN_FLIGHT_SECONDS} of them are
 * still waiting for `startFlow`, so a producer that cannot keep up shows as started < offered.
 */
class Producer {
  #started = 0;
  #issued = 0;
  #inFlight = new Set<Promise<void>>();
  #timer: number | undefined;
  #error: unknown;

  constructor(
    private readonly pool: WorkerPool,
    private readonly workload: WorkerWorkload,
    private readonly rate: number,
  ) {}

  /** Starts producing. */
  start(): void {
    const t0 = performance.now();
    const tick = () => {
      const due = Math.floor((performance.now() - t0) / 1000 * this.rate) - this.#issued;
      const room = this.rate * MAX_IN_FLIGHT_SECONDS - this.#inFlight.size;
      const count = Math.max(0, Math.min(due, room));
      // Runs skipped for lack of room are not made up later: the offered load is a rate.
      this.#issued += Math.max(0, due);
      for (let i = 0; i < count; i++) {
        const call = startFlow(this.pool.producer, this.workload.flow, { n: this.#issued })
          .then(() => {
            this.#started++;
          }, (error) => {
            this.#error ??= error;
          })
          .finally(() => this.#inFlight.delete(call));
        this.#inFlight.add(call);
      }
      this.#timer = setTimeout(tick, PRODUCER_TICK_MS);
    };
    tick();
  }

  /** Runs started since the last call; throws the first `startFlow` error. */
  takeStarted(): number {
    if (this.#error !== undefined) throw this.#error;
    const started = this.#started;
    this.#started = 0;
    return started;
  }

  /** Stops producing and waits for the calls in flight. */
  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    await Promise.all([...this.#inFlight]);
  }
}

/** An idle-in-transaction session that took an xid: `begin; select txid_current();`, then idle. */
interface HeldXid {
  xid: string;
  release(): Promise<void>;
}

async function holdXid(url: string): Promise<HeldXid> {
  // One connection, so that `begin` and what follows share it.
  const sql = postgres(url, {
    max: 1,
    prepare: false,
    onnotice: () => {},
    connection: { application_name: "sluice-soak-held-xid" },
  });
  await sql`begin`;
  const [{ xid }] = await sql<{ xid: string }[]>`select txid_current()::text as xid`;
  let released = false;
  return {
    xid,
    async release() {
      if (released) return;
      released = true;
      await sql`rollback`.catch(() => {});
      await sql.end();
    },
  };
}

/** Every sluice and PGMQ table: total size and dead tuples. */
async function tableSamples(admin: Sql): Promise<TableSample[]> {
  return await admin<TableSample[]>`
    select schemaname || '.' || relname as name,
      pg_total_relation_size(relid)::float8 as size, n_dead_tup::float8 as dead
    from pg_stat_user_tables
    where schemaname in ('sluice', 'pgmq')
    order by 1`;
}

/** The runs that finished in [from, to): counts and latency percentiles. */
async function finishedRuns(admin: Sql, from: Date, to: Date) {
  const [row] = await admin<
    { completed: number; failed: number; p50: number | null; p95: number | null }[]
  >`
    select count(*) filter (where status = 'completed')::int as completed,
      count(*) filter (where status = 'failed')::int as failed,
      percentile_cont(0.5) within group (
        order by extract(epoch from completed_at - started_at) * 1000
      ) filter (where status = 'completed') as p50,
      percentile_cont(0.95) within group (
        order by extract(epoch from completed_at - started_at) * 1000
      ) filter (where status = 'completed') as p95
    from sluice.runs
    where status <> 'started'
      and coalesce(completed_at, failed_at, cancelled_at) >= ${from}
      and coalesce(completed_at, failed_at, cancelled_at) < ${to}`;
  return row;
}

async function serverNow(admin: Sql): Promise<Date> {
  const [{ now }] = await admin<{ now: Date }[]>`select clock_timestamp() as now`;
  return now;
}

async function openRuns(admin: Sql): Promise<number> {
  const [{ open }] = await admin<{ open: number }[]>`
    select count(*)::int as open from sluice.runs where status = 'started'`;
  return open;
}

function intervalEnd(plan: SoakPlan, index: number): string {
  const seconds = (index + 1) * plan.intervalSeconds;
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

function shortName(name: string): string {
  return name.replace(/^sluice\./, "");
}

function intervalRow(plan: SoakPlan, sample: IntervalSample, rate: number): string[] {
  const biggest = [...sample.tables].sort((a, b) => b.size - a.size).slice(0, BIGGEST);
  return [
    intervalEnd(plan, sample.index),
    sample.phase,
    whole(rate),
    whole(sample.startedPerSecond),
    whole(sample.completedPerSecond),
    whole(sample.failed),
    whole(sample.backlog),
    duration(sample.p50Ms),
    duration(sample.p95Ms),
    whole(sample.xminAge),
    whole(sum(sample.tables.map((table) => table.dead))),
    bytes(sum(sample.tables.map((table) => table.size))),
    biggest.map((t) => `${shortName(t.name)} ${bytes(t.size)}/${whole(t.dead)}`).join(", "),
    sample.load,
  ];
}

/** Per table: size and dead tuples at the phase boundaries, and the clean phase's growth. */
function tableRows(plan: SoakPlan, samples: IntervalSample[]): string[][] {
  const at = (index: number) =>
    new Map((samples[index]?.tables ?? []).map((table) => [table.name, table]));
  const points = [0, Math.floor(plan.holdFrom / 2) - 1, plan.holdFrom - 1, plan.holdTo - 1]
    .map(at);
  const last = at(samples.length - 1);
  const growth = new Map(cleanGrowth(plan, samples).map((table) => [table.name, table]));
  const maxDead = (name: string, phase: string) =>
    Math.max(
      0,
      ...samples.filter((s) => s.phase === phase).map((s) =>
        s.tables.find((table) => table.name === name)?.dead ?? 0
      ),
    );
  const names = (samples.at(-1)?.tables ?? []).map((table) => table.name);
  const cell = (table: TableSample | undefined) =>
    table === undefined ? "–" : `${bytes(table.size)} / ${whole(table.dead)}`;
  return names.map((name) => [
    name,
    ...points.map((point) => cell(point.get(name))),
    cell(last.get(name)),
    whole(maxDead(name, "clean")),
    whole(maxDead(name, "held")),
    growth.get(name)?.flat === false ? "grew" : "flat",
  ]);
}

interface Options {
  quick: boolean;
  plan: SoakPlan;
  rate: number;
  workers: number;
  concurrency: number;
  retentionMinutes: number;
}

function options(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      minutes: { type: "string" },
      rate: { type: "string", default: "100" },
      "hold-at": { type: "string" },
      "hold-minutes": { type: "string" },
      interval: { type: "string" },
      workers: { type: "string", default: "2" },
      concurrency: { type: "string", default: "10" },
      "retention-minutes": { type: "string" },
    },
  });
  const quick = values.quick;
  const number = (option: string, value: string | undefined, fallback: number) => {
    const parsed = value === undefined ? fallback : Number(value);
    if (!Number.isFinite(parsed)) throw new SoakOptionError(option, parsed, "needs a number");
    return parsed;
  };
  const positiveInteger = (option: string, value: string | undefined, fallback: number) => {
    const parsed = number(option, value, fallback);
    if (!(Number.isInteger(parsed) && parsed > 0)) {
      throw new SoakOptionError(option, parsed, "needs a positive whole number");
    }
    return parsed;
  };
  const plan = soakPlan({
    minutes: number("--minutes", values.minutes, quick ? 3 : 30),
    holdAt: number("--hold-at", values["hold-at"], quick ? 1 : 20),
    holdMinutes: number("--hold-minutes", values["hold-minutes"], quick ? 1 : 5),
    intervalSeconds: number("--interval", values.interval, quick ? 20 : 60),
  });
  const retentionMinutes = number(
    "--retention-minutes",
    values["retention-minutes"],
    quick ? 1 : 2,
  );
  // The latency of an interval is read from the runs it finished: they must not be pruned yet.
  if (retentionMinutes !== 0 && !(retentionMinutes * 60 >= 2 * plan.intervalSeconds)) {
    throw new SoakOptionError(
      "--retention-minutes",
      retentionMinutes,
      `needs 0 (never prune) or at least two intervals (${2 * plan.intervalSeconds} s)`,
    );
  }
  return {
    quick,
    plan,
    rate: positiveInteger("--rate", values.rate, 100),
    workers: positiveInteger("--workers", values.workers, 2),
    concurrency: positiveInteger("--concurrency", values.concurrency, 10),
    retentionMinutes,
  };
}

async function main(args: string[]): Promise<void> {
  const { quick, plan, rate, workers, concurrency, retentionMinutes } = options(args);
  const stopping = new AbortController();
  const onInterrupt = () => {
    log("interrupted: stopping after cleanup");
    stopping.abort();
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  const loadBefore = await loadAverage();
  await using db = await benchDatabase();
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const admin = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const workload = linear3(() => {});
  const samples: IntervalSample[] = [];
  let held: HeldXid | undefined;
  let drained = "";
  let autovacuum = "";
  try {
    [{ autovacuum }] = await admin<{ autovacuum: string }[]>`
      select format('autovacuum %s, naptime %s, vacuum scale factor %s',
        current_setting('autovacuum'), current_setting('autovacuum_naptime'),
        current_setting('autovacuum_vacuum_scale_factor')) as autovacuum`;
    await using pool = await startWorkers(db.url, workload, workers, concurrency);
    const producer = new Producer(pool, workload, rate);
    const t0 = performance.now();
    let from = await serverNow(admin);
    producer.start();
    try {
      for (let index = 0; index < plan.intervals && !stopping.signal.aborted; index++) {
        if (index === plan.holdFrom) {
          held = await holdXid(db.url);
          log(`holding xid ${held.xid} in an idle transaction`);
        }
        if (index === plan.holdTo) {
          await held?.release();
          log("released the held xid");
        }
        const wait = t0 + (index + 1) * plan.intervalSeconds * 1000 - performance.now();
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.max(0, wait));
          stopping.signal.addEventListener("abort", done, { once: true });
          function done() {
            clearTimeout(timer);
            resolve();
          }
        });
        if (stopping.signal.aborted) break;
        const to = await serverNow(admin);
        const seconds = (to.getTime() - from.getTime()) / 1000;
        const runs = await finishedRuns(admin, from, to);
        const [{ xmin }] = await admin<{ xmin: number }[]>`
          select coalesce(max(age(backend_xmin)), 0)::int as xmin from pg_stat_activity`;
        const sample: IntervalSample = {
          index,
          phase: phaseOf(plan, index),
          startedPerSecond: producer.takeStarted() / seconds,
          completedPerSecond: runs.completed / seconds,
          failed: runs.failed,
          backlog: await openRuns(admin),
          p50Ms: runs.p50 ?? NaN,
          p95Ms: runs.p95 ?? NaN,
          xminAge: xmin,
          tables: await tableSamples(admin),
          load: await loadAverage(),
        };
        samples.push(sample);
        from = to;
        log(`${intervalRow(plan, sample, rate).join(" | ")}`);
        if (retentionMinutes > 0) await pruneDataOlderThan(admin, `${retentionMinutes} minutes`);
      }
    } finally {
      await held?.release();
      await producer.stop();
    }
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    let open = await openRuns(admin);
    while (open > 0 && Date.now() < deadline && !stopping.signal.aborted) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      open = await openRuns(admin);
    }
    drained = open === 0
      ? "Every run started finished before the workers stopped"
      : `${whole(open)} runs were still open when the workers stopped`;
  } finally {
    await held?.release();
    await admin.end();
    Deno.removeSignalListener("SIGINT", onInterrupt);
  }

  const lines = [
    "",
    `## Soak benchmark${quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}, ${autovacuum}; ${navigator.hardwareConcurrency} CPUs; ` +
    `load average before ${loadBefore}, after ${await loadAverage()}.`,
    `linear3 at ${
      whole(rate)
    } runs/s offered (startFlow from 4 producer connections, open loop); ` +
    `${workers} workers × maxConcurrent ${concurrency} in this process, each with its own pool of ` +
    `4 connections plus one LISTEN connection; no-op handlers. ${
      plan.intervals * plan.intervalSeconds / 60
    } minutes in ${plan.intervalSeconds} s intervals: clean until ` +
    `${intervalEnd(plan, plan.holdFrom - 1)}, an idle-in-transaction session holding an xid ` +
    `until ${intervalEnd(plan, plan.holdTo - 1)}, then recovery. ` +
    (retentionMinutes > 0
      ? `After each interval, runs finished more than ${retentionMinutes} min ago are pruned. `
      : "Nothing is pruned. ") +
    `Latency: completed_at − started_at of the runs completed in the interval. ${drained}.`,
    "",
    markdownTable(
      [
        "end",
        "phase",
        "offered/s",
        "started/s",
        "completed/s",
        "failed",
        "backlog",
        "p50",
        "p95",
        "xmin age",
        "dead tuples",
        "size",
        `biggest ${BIGGEST} (size/dead)`,
        "load",
      ],
      samples.map((sample) => intervalRow(plan, sample, rate)),
    ),
    "",
    "Every table (size / dead tuples):",
    "",
    markdownTable(
      [
        "table",
        "first interval",
        "clean, half",
        "clean, end",
        "held, end",
        "end",
        "max dead clean",
        "max dead held",
        "clean 2nd half",
      ],
      tableRows(plan, samples),
    ),
    "",
    "Targets:",
    "",
    ...evaluateTargets(plan, samples, rate).map((verdict) =>
      `- ${verdict.met ? "met" : "NOT met"}: ${verdict.target}: ${verdict.figures}.`
    ),
  ];
  console.log(lines.join("\n"));
}

if (import.meta.main) await main(Deno.args);
