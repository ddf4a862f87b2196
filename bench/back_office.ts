/**
 * `deno task bench:back_office [--quick] [...]`: what private per-step queues cost the back-office
 * example (examples/back_office, ten small flows) against a grouped layout in which several flows'
 * light steps share one queue served by one worker: worker functions deployed against Supabase's
 * limits, the idle database load of real idle workers, and the starvation of light steps by a
 * heavy step on a shared queue. See bench/README.md for how the grouped layout is built.
 *
 * Options:
 *   --quick           smoke run: 10 s idle windows, a flood of 200, a burst of 500, 15 probes
 *   --idle-seconds 30 length of each idle window
 *   --flood 1000      heavy tasks started before the probes
 *   --burst 3000      bulk (digest) tasks started before the probes of the burst scenario
 *   --probes 40       light probe runs, one every --interval ms
 *   --interval 100    ms between two probe starts
 *   --heavy-ms 200    duration of the heavy step's handler (the image resize stand-in)
 *
 * Uses the server at DATABASE_URL when set (creating and dropping a database of its own), else a
 * throwaway cluster with pg_stat_statements.
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
import { migrate } from "../src/migrations/migrate.ts";
import { PROJECT_MIGRATIONS } from "../examples/back_office/setup.ts";
import { startFunctionWorker, type WorkerFunction } from "../examples/back_office/dev/harness.ts";
import {
  loadAccount,
  mailOnce,
  storeObject,
} from "../examples/back_office/supabase/functions/_shared/office.ts";
import { servicesFromEnv } from "../examples/back_office/supabase/functions/_shared/services.ts";
import { benchDatabase } from "./_bench_database.ts";
import { loadAverage, processCpuMs } from "./_machine.ts";
import { duration, markdownTable, median, quantile, whole } from "./_stats.ts";
import {
  type FlowPlacement,
  FUNCTION_LIMITS,
  GROUPED_QUEUES,
  groupedQueues,
  placements,
} from "./_back_office_layout.ts";

const MAX_CONCURRENT = 10;
const WARM_UP_RUNS = 100;

interface Settings {
  readonly idleSeconds: number;
  readonly flood: number;
  readonly burst: number;
  readonly probes: number;
  readonly intervalMs: number;
  readonly heavyMs: number;
}

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function percent(part: number, whole: number): string {
  return `${Math.round(100 * part / whole)} %`;
}

// ---------------------------------------------------------------------------------------------
// Worker functions deployed

interface CountResult {
  readonly flows: FlowPlacement[];
  readonly perStep: number;
  readonly grouped: number;
  readonly queues: string[];
}

/** The grouped queue whose host runs `fn`: its step's, or for a plain flow its first step's. */
function hostOf(fn: WorkerFunction): string {
  const queues = GROUPED_QUEUES[fn.flowSlug];
  return fn.stepSlug === null ? Object.values(queues)[0] : queues[fn.stepSlug];
}

function countFunctions(flows: FlowPlacement[]): CountResult {
  const perStep = flows.reduce((n, flow) => n + flow.perStep.length, 0);
  const queues = groupedQueues(flows);
  return { flows, perStep, grouped: queues.length, queues };
}

function countTables(counts: CountResult): string {
  const perFlow = markdownTable(
    [
      "flow",
      "mode today",
      "steps",
      "per-step layout: functions",
      "grouped layout: queues of its steps",
    ],
    counts.flows.map((flow) => [
      flow.flowSlug,
      flow.mode,
      String(flow.steps.length),
      String(flow.perStep.length),
      [...new Set(Object.values(flow.grouped))].join(", "),
    ]),
  );
  const largest = counts.flows.reduce((a, b) => (b.perStep.length > a.perStep.length ? b : a));
  const limits = (n: number) => FUNCTION_LIMITS.map((l) => percent(n, l.functions)).join(" / ");
  const rows: [string, number, number, number][] = [
    // A V1 -> V2 rollout keeps V1's functions until V1's runs drained: the per-step layout
    // deploys V2's functions beside them. A shared-queue worker's registry holds both versions
    // (the rollout issue 34 specifies), so the grouped layout deploys no new function.
    [
      "per-step (today)",
      counts.perStep,
      counts.perStep + largest.perStep.length,
      2 * counts.perStep,
    ],
    ["grouped (no API yet)", counts.grouped, counts.grouped, counts.grouped],
  ];
  const totals = markdownTable(
    [
      "layout",
      "steady state",
      `rollout of one flow (${largest.flowSlug}, ${largest.perStep.length})`,
      "rollout of every flow at once",
      "steady / all-flows rollout, of Free / Pro / Team",
    ],
    rows.map(([name, steady, one, all]) => [
      name,
      String(steady),
      String(one),
      String(all),
      `${limits(steady)}; ${limits(all)}`,
    ]),
  );
  // Projection: more flows of the same mix. Per-step grows by the mix's functions per flow; the
  // grouped layout keeps its shared queues and adds the mix's isolated queues per flow.
  const flows = counts.flows.length;
  const perFlow1 = counts.perStep / flows;
  const shared = counts.queues.filter((q) => q === "office_interactive" || q === "office_bulk");
  const isolatedPerFlow = (counts.grouped - shared.length) / flows;
  const projection = markdownTable(
    [
      "flows of this mix",
      "per-step steady",
      "per-step all-flows rollout",
      "grouped steady = rollout",
    ],
    [10, 25, 50, 100, 200, 400].map((n) => [
      String(n),
      whole(n * perFlow1),
      whole(2 * n * perFlow1),
      whole(shared.length + n * isolatedPerFlow),
    ]),
  );
  const firstOver = (perFlow: number, fixed: number) =>
    FUNCTION_LIMITS.map((l) => `${l.plan} ${Math.floor((l.functions - fixed) / perFlow)}`).join(
      ", ",
    );
  return [
    perFlow,
    "",
    totals,
    "",
    `Grouped queues: ${counts.queues.join(", ")}.`,
    "",
    `Projection (${perFlow1.toFixed(1)} functions per flow per-step; grouped: ` +
    `${shared.length} shared queues + ${isolatedPerFlow.toFixed(1)} isolated queues per flow):`,
    "",
    projection,
    "",
    `Most flows of this mix that fit, no other function deployed: per-step steady ` +
    `${firstOver(perFlow1, 0)}; per-step during an all-flows rollout ${
      firstOver(2 * perFlow1, 0)
    }; grouped ${firstOver(isolatedPerFlow, shared.length)}.`,
  ].join("\n");
}

// ---------------------------------------------------------------------------------------------
// Idle database load

interface IdleResult {
  readonly layout: string;
  readonly listen: boolean;
  readonly workers: number;
  /** Worker functions (processes) the workers run in. */
  readonly hosts: number;
  readonly seconds: number;
  readonly reads: number;
  readonly heartbeats: number;
  readonly statements: number;
  readonly nested: number;
  readonly connectionsMean: number;
  readonly connectionsMax: number;
  readonly serverCpuMs: number | null;
  /** The top-level statements sent, most calls first. */
  readonly top: readonly { readonly query: string; readonly calls: number }[];
}

async function connections(sql: Sql): Promise<{ count: number; pids: number[] }> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'`;
  return { count: rows.length, pids: rows.map((r) => r.pid) };
}

async function cpuOf(pids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    const ms = await processCpuMs([pid]);
    if (ms !== undefined) out.set(pid, ms);
  }
  return out;
}

/**
 * Starts `start()`'s workers, lets them settle (compile, register, first reads), then counts for
 * `seconds`: the read-and-claim statement, heartbeats and every other top-level statement
 * (pg_stat_statements), connections (pg_stat_activity, sampled each second) and, on a local
 * server, the CPU time of the workers' backends.
 */
async function measureIdle(
  sql: Sql,
  local: boolean,
  layout: string,
  listen: boolean,
  seconds: number,
  start: () => Promise<WorkerHandle[]>,
  hosts = 0,
  close: () => Promise<void> = async () => {},
): Promise<IdleResult> {
  const workers = await start();
  try {
    await sleep(3000);
    await sql`select pg_stat_statements_reset()`;
    const before = await connections(sql);
    const cpuBefore = local ? await cpuOf(before.pids) : new Map<number, number>();
    const samples: number[] = [];
    const end = Date.now() + seconds * 1000;
    while (Date.now() < end) {
      samples.push((await connections(sql)).count);
      await sleep(1000);
    }
    let serverCpuMs: number | null = null;
    if (local) {
      const cpuAfter = await cpuOf(before.pids);
      serverCpuMs = 0;
      for (const [pid, ms] of cpuAfter) serverCpuMs += ms - (cpuBefore.get(pid) ?? ms);
    }
    const [stats] = await sql<
      { reads: number; heartbeats: number; statements: number; nested: number }[]
    >`
      select
        coalesce(sum(calls) filter (where toplevel and query like '%sluice.start_tasks%'), 0)::int
          as reads,
        coalesce(sum(calls) filter (where toplevel and query like '%heartbeat_worker%'), 0)::int
          as heartbeats,
        coalesce(sum(calls) filter (where toplevel), 0)::int as statements,
        coalesce(sum(calls) filter (where not toplevel), 0)::int as nested
      from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and query not like '%pg_stat%'`;
    const top = await sql<{ query: string; calls: number }[]>`
      select regexp_replace(query, '\\s+', ' ', 'g') as query, calls::int
      from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
        and toplevel and query not like '%pg_stat%'
      order by calls desc limit 8`;
    return {
      layout,
      listen,
      top: top.map((row) => ({ ...row })),
      workers: workers.length,
      hosts: hosts === 0 ? workers.length : hosts,
      seconds,
      ...stats,
      connectionsMean: samples.reduce((a, b) => a + b, 0) / samples.length,
      connectionsMax: Math.max(...samples),
      serverCpuMs,
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    await close();
  }
}

function idleTable(results: IdleResult[]): string {
  const perMinute = (n: number, r: IdleResult) => whole(n * 60 / r.seconds);
  return markdownTable(
    [
      "layout",
      "wake-up",
      "worker functions (idle workers)",
      "read-and-claim calls / min",
      "heartbeats / min",
      "all top-level statements / min",
      "nested statements / min",
      "connections held: mean (max)",
      "server CPU of their backends, ms / min",
    ],
    results.map((r) => [
      r.layout,
      r.listen ? "LISTEN, 1 s look" : "long poll (pooler), 5 s",
      r.hosts === r.workers ? String(r.workers) : `${r.hosts} (${r.workers})`,
      perMinute(r.reads, r),
      perMinute(r.heartbeats, r),
      perMinute(r.statements, r),
      perMinute(r.nested, r),
      `${r.connectionsMean.toFixed(1)} (${r.connectionsMax})`,
      r.serverCpuMs === null ? "–" : perMinute(r.serverCpuMs, r),
    ]),
  );
}

function statementTable(result: IdleResult): string {
  return markdownTable(
    ["calls / min per idle worker", "statement"],
    result.top.map((row) => [
      (row.calls * 60 / result.seconds / result.workers).toFixed(1),
      `\`${row.query.slice(0, 100).replaceAll("|", "\\|")}\``,
    ]),
  );
}

// ---------------------------------------------------------------------------------------------
// Starvation: a heavy step sharing a queue with light steps, and on its own queue

type Kind = "heavy" | "light" | "bulk";

/**
 * The bench's stand-in for a shared queue: one carrier flow whose two root steps run the
 * example's heavy work (the image resize stand-in, then storing the thumbnail) and its light work
 * (a password-reset mail), or a digest mail (light, but sent in bursts), chosen by the input. As a plain flow both steps' tasks wait in one
 * queue and one pool of workers claims them in order, which is what a shared queue with a
 * multi-flow worker does; wrapped with `withStepQueues()` each gets its own queue and workers.
 */
function carrier(slug: string, heavyMs: number, accountId: number) {
  const services = servicesFromEnv({ RESIZE_MS: String(heavyMs) });
  return new Flow<{ kind: Kind }>({ slug, timeout: 60 })
    .step({ slug: "heavy", if: { kind: "heavy" } }, async (_input, ctx) => {
      const size = await services.resize({ width: 2000, height: 1000 }, 256, ctx.signal);
      await storeObject(ctx.sql, `bench/${ctx.runId}.webp`, "image/webp", new Uint8Array(64));
      return size;
    })
    .step({ slug: "light", if: { kind: "light" } }, async (_input, ctx) => {
      const account = await loadAccount(ctx.sql, accountId);
      const emailId = await mailOnce(ctx.sql, services, account, {
        kind: "password_reset",
        dedupeKey: ctx.runId,
        subject: "Reset your password",
        body: "https://app.example/reset",
      }, ctx.signal);
      return { emailId };
    })
    .step({ slug: "bulk", if: { kind: "bulk" } }, async (_input, ctx) => {
      // A weekly digest: light work too, but it comes as a burst of one task per account.
      const account = await loadAccount(ctx.sql, accountId);
      const emailId = await mailOnce(ctx.sql, services, account, {
        kind: "weekly_digest",
        dedupeKey: ctx.runId,
        subject: "Your week",
        body: "A quiet week.",
      }, ctx.signal);
      return { emailId };
    });
}

interface StarvationLayout {
  readonly label: string;
  readonly workers: string;
  /** The step whose tasks flood the queue. */
  readonly flooding: "heavy" | "bulk";
  readonly flow: DeployableFlow;
  readonly slug: string;
  /** Starts the workers; `close` releases what they share once they stopped. */
  start(url: string): Promise<{ workers: WorkerHandle[]; close?: () => Promise<void> }>;
}

function starvationLayouts(heavyMs: number, accountId: number): StarvationLayout[] {
  const options = (url: string) => ({
    connectionString: url,
    maxConcurrent: MAX_CONCURRENT,
    logLevel: "warn" as const,
    env: {},
  });
  return (["heavy", "bulk"] as const).flatMap((flooding): StarvationLayout[] => {
    const shared = carrier(`office_shared_${flooding}`, heavyMs, accountId);
    const split = withStepQueues(carrier(`office_split_${flooding}`, heavyMs, accountId));
    const cohosted = withStepQueues(carrier(`office_cohost_${flooding}`, heavyMs, accountId));
    return [
      {
        label: `${flooding} shares the light step's queue`,
        workers: `2 × ${MAX_CONCURRENT} on the shared queue`,
        flooding,
        flow: shared,
        slug: shared.slug,
        async start(url) {
          return {
            workers: [
              await startWorker(shared, options(url)),
              await startWorker(shared, options(url)),
            ],
          };
        },
      },
      {
        label: `${flooding} on its own queue`,
        workers: `1 × ${MAX_CONCURRENT} light + 1 × ${MAX_CONCURRENT} ${flooding}`,
        flooding,
        flow: split,
        slug: split.flow.slug,
        async start(url) {
          return {
            workers: [
              await startWorker(split, { ...options(url), stepSlug: "light" }),
              await startWorker(split, { ...options(url), stepSlug: flooding }),
            ],
          };
        },
      },
      {
        label: `${flooding} on its own queue, co-hosted`,
        workers: `as above, in one process on one pool of 4`,
        flooding,
        flow: cohosted,
        slug: cohosted.flow.slug,
        async start(url) {
          const pool = connect(url, { max: 4 });
          const { connectionString: _, ...rest } = options(url);
          return {
            workers: [
              await startWorker(cohosted, { ...rest, sql: pool, stepSlug: "light" }),
              await startWorker(cohosted, { ...rest, sql: pool, stepSlug: flooding }),
            ],
            close: () => pool.end(),
          };
        },
      },
    ];
  });
}

async function flood(sql: Sql, slug: string, runs: number, kind: Kind): Promise<void> {
  // Sent as text: postgres.js would send a string cast to jsonb as a JSON string.
  const input = JSON.stringify({ kind });
  await sql`
    select count(sluice.start_flow(${slug}, ${input}::text::jsonb)) from generate_series(1, ${runs})`;
}

async function drained(sql: Sql, slug: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from sluice.runs where flow_slug = ${slug} and status <> 'completed'`;
    if (row.n === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`${row.n} runs of ${slug} unfinished after ${timeoutMs} ms`);
    }
    await sleep(250);
  }
}

/** Light latency of each probe: the light task's `completed_at - queued_at` (server clock). */
async function probe(
  sql: Sql,
  layout: StarvationLayout,
  settings: Settings,
): Promise<{ latenciesMs: number[]; backlog: number }> {
  const [{ backlog }] = await sql<{ backlog: number }[]>`
    select count(*)::int as backlog from sluice.step_tasks
    where flow_slug = ${layout.slug} and step_slug = ${layout.flooding}
      and status in ('queued', 'started')`;
  const runIds: string[] = [];
  const first = performance.now();
  for (let i = 0; i < settings.probes; i++) {
    await sleep(Math.max(0, first + i * settings.intervalMs - performance.now()));
    runIds.push(await startFlow(sql, layout.flow, { kind: "light" }));
  }
  const deadline = Date.now() + 600_000;
  for (;;) {
    const rows = await sql<{ ms: number | null }[]>`
      select (extract(epoch from completed_at - queued_at) * 1000)::float8 as ms
      from sluice.step_tasks where run_id = any(${runIds}::uuid[]) and step_slug = 'light'`;
    if (rows.length === runIds.length && rows.every((r) => r.ms !== null)) {
      return { latenciesMs: rows.map((r) => r.ms!), backlog };
    }
    if (Date.now() > deadline) throw new Error(`probes of ${layout.slug} did not finish in 10 min`);
    await sleep(100);
  }
}

interface StarvationResult {
  readonly layout: StarvationLayout;
  readonly idle: number[];
  readonly flooded: number[];
  readonly backlog: number;
  readonly load: string;
}

async function measureStarvation(
  url: string,
  sql: Sql,
  layout: StarvationLayout,
  settings: Settings,
): Promise<StarvationResult> {
  const { workers, close } = await layout.start(url);
  try {
    await flood(sql, layout.slug, WARM_UP_RUNS / 2, layout.flooding);
    await flood(sql, layout.slug, WARM_UP_RUNS / 2, "light");
    await drained(sql, layout.slug, 120_000);
    await sql`vacuum analyze`;
    log(`${layout.slug}: idle probes`);
    const idle = await probe(sql, layout, settings);
    const count = layout.flooding === "heavy" ? settings.flood : settings.burst;
    log(`${layout.slug}: ${whole(count)} ${layout.flooding} tasks, then probes`);
    await flood(sql, layout.slug, count, layout.flooding);
    const flooded = await probe(sql, layout, settings);
    const load = (await loadAverage()).split(" ")[0];
    await drained(
      sql,
      layout.slug,
      3 * settings.flood * settings.heavyMs / MAX_CONCURRENT + 120_000,
    );
    return {
      layout,
      idle: idle.latenciesMs,
      flooded: flooded.latenciesMs,
      backlog: flooded.backlog,
      load,
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
    await close?.();
  }
}

function starvationTable(results: StarvationResult[]): string {
  return markdownTable(
    [
      "layout",
      "workers",
      "light latency idle p50 / p95",
      "light latency flooded p50 / p95",
      "p95 flooded / idle",
      "flooding tasks unfinished at first probe",
      "load (1 min) at end",
    ],
    results.map((r) => {
      const idle95 = quantile(r.idle, 0.95);
      const flooded95 = quantile(r.flooded, 0.95);
      return [
        r.layout.label,
        r.layout.workers,
        `${duration(median(r.idle))} / ${duration(idle95)}`,
        `${duration(median(r.flooded))} / ${duration(flooded95)}`,
        `${(flooded95 / idle95).toFixed(flooded95 / idle95 < 10 ? 2 : 0)}×`,
        whole(r.backlog),
        r.load,
      ];
    }),
  );
}

// ---------------------------------------------------------------------------------------------

async function main(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      quick: { type: "boolean", default: false },
      "idle-seconds": { type: "string" },
      flood: { type: "string" },
      burst: { type: "string" },
      probes: { type: "string" },
      interval: { type: "string", default: "100" },
      "heavy-ms": { type: "string", default: "200" },
    },
  });
  const numbers = {
    "idle-seconds": Number(values["idle-seconds"] ?? (values.quick ? 10 : 30)),
    flood: Number(values.flood ?? (values.quick ? 200 : 1000)),
    burst: Number(values.burst ?? (values.quick ? 500 : 3000)),
    probes: Number(values.probes ?? (values.quick ? 15 : 40)),
    interval: Number(values.interval),
    "heavy-ms": Number(values["heavy-ms"]),
  };
  for (const [name, value] of Object.entries(numbers)) {
    if (!Number.isFinite(value) || value < 1) {
      throw new Error(`--${name} must be a number >= 1, got "${value}"`);
    }
  }
  const settings: Settings = {
    idleSeconds: numbers["idle-seconds"],
    flood: numbers.flood,
    burst: numbers.burst,
    probes: numbers.probes,
    intervalMs: numbers.interval,
    heavyMs: numbers["heavy-ms"],
  };
  const began = Date.now();
  const loadBefore = await loadAverage();
  const flows = await placements();
  const counts = countFunctions(flows);

  await using db = await benchDatabase({
    settings: {
      shared_preload_libraries: "pg_stat_statements",
      "pg_stat_statements.track": "all",
      max_connections: 300,
    },
  });
  log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
  const sql = connect(db.url, { max: 2 });
  const idle: IdleResult[] = [];
  const starvation: StarvationResult[] = [];
  try {
    await migrate(sql, { directory: PROJECT_MIGRATIONS });
    await sql`create extension if not exists pg_stat_statements`;
    const [{ id: accountId }] = await sql<{ id: number }[]>`
      insert into public.accounts (email, name) values ('bench@example.com', 'Bench') returning id`;

    for (const listen of [true, false]) {
      const options = { connectionString: db.url, logLevel: "warn" as const, env: {}, listen };
      log(`idle, per-step layout: ${counts.perStep} workers (listen ${listen})`);
      idle.push(
        await measureIdle(
          sql,
          db.local,
          "per-step (today)",
          listen,
          settings.idleSeconds,
          () =>
            Promise.all(
              flows.flatMap((f) => f.perStep).map((fn) => startFunctionWorker(fn, options)),
            ),
        ),
      );
      log(`idle, grouped layout: ${counts.grouped} workers (listen ${listen})`);
      idle.push(
        await measureIdle(
          sql,
          db.local,
          "grouped",
          listen,
          settings.idleSeconds,
          () =>
            Promise.all(counts.queues.map((queue) =>
              // One worker per grouped queue: the same poll loop, read statement, heartbeat and
              // LISTEN session a multi-flow worker of that queue would run.
              startWorker(
                new Flow<Record<string, never>>({ slug: queue }).step({ slug: "noop" }, () => null),
                options,
              )
            )),
        ),
      );
    }

    {
      // LISTEN only: a long poll holds a pool connection for up to 5 s, so long-polling workers
      // cannot share a pool smaller than their number (tried once with 17 workers on 4
      // connections: heartbeats were cancelled and stopping hung).
      const listen = true;
      // Co-hosted: today's private per-step queues and workers, but the workers of one grouped
      // queue's steps in one process sharing one pool (each still opens its own LISTEN session),
      // as one function hosting several step workers would run them.
      const pools: Sql[] = [];
      log(`idle, co-hosted layout: ${counts.perStep} workers in ${counts.grouped} hosts`);
      idle.push(
        await measureIdle(
          sql,
          db.local,
          "co-hosted (no API yet)",
          listen,
          settings.idleSeconds,
          () =>
            Promise.all(counts.queues.flatMap((queue) => {
              const pool = connect(db.url, { max: 4 });
              pools.push(pool);
              return flows.flatMap((f) => f.perStep).filter((fn) => hostOf(fn) === queue).map((
                fn,
              ) => startFunctionWorker(fn, { sql: pool, logLevel: "warn", env: {}, listen }));
            })),
          counts.grouped,
          async () => {
            await Promise.all(pools.map((pool) => pool.end()));
          },
        ),
      );
    }

    for (const layout of starvationLayouts(settings.heavyMs, accountId)) {
      starvation.push(await measureStarvation(db.url, sql, layout, settings));
    }
  } finally {
    await sql.end();
  }

  console.log([
    "",
    `## Back-office benchmark${values.quick ? " (quick)" : ""}`,
    "",
    `${db.server}, PGMQ ${db.pgmq}; ${navigator.hardwareConcurrency} CPUs; load average before ` +
    `${loadBefore}, after ${await loadAverage()}; ${
      ((Date.now() - began) / 60_000).toFixed(1)
    } min.`,
    "",
    "### Worker functions deployed",
    "",
    countTables(counts),
    "",
    "### Idle database load",
    "",
    `Real idle workers (worker defaults: pool of 4, heartbeat 5 s), counted over ` +
    `${settings.idleSeconds} s after a 3 s settle; per minute.`,
    "",
    idleTable(idle),
    "",
    ...idle.filter((r) => r.layout.startsWith("per-step")).flatMap((r) => [
      `What the per-step layout's idle workers send (${
        r.listen ? "LISTEN" : "long poll"
      }), per worker:`,
      "",
      statementTable(r),
      "",
    ]),
    "### Starvation of light steps by a heavy step",
    "",
    `Heavy: the resize stand-in (${settings.heavyMs} ms) and a stored object; bulk: a digest ` +
    "mail (light work in a burst); light: a password-reset mail. " +
    `${whole(settings.flood)} heavy or ${whole(settings.burst)} bulk tasks started in one ` +
    "transaction, then " +
    `${settings.probes} light runs one every ${settings.intervalMs} ms; idle: the same probes ` +
    "without the flood. Latency = the light task's completed_at − queued_at.",
    "",
    starvationTable(starvation),
  ].join("\n"));
}

if (import.meta.main) await main(Deno.args);
