/**
 * `deno task bench:waits [--runs 10000] [...]`: what durable waits (docs/waits.md) cost a real
 * `startWorker` worker, and how soon a released wait's next step runs. See bench/README.md.
 *
 * 1. Idle cost: the worker idles for a window with no waiting run, then again with `--runs`
 *    runs of `prepare -> waitForSignal -> finish` waiting, then (the control) with the same tables
 *    once the runs not signalled are cancelled; each window counts claims (attempts in
 *    `sluice.step_tasks`) and handler executions (the handlers' own counter), which must be 0,
 *    and gives the cost per call of the poll (the read-and-claim statement) and of the
 *    heartbeat's `release_due_waits` from `pg_stat_statements` (shared buffers, exec time).
 * 2. Signals: `sendSignal` to a sample of the waiting runs, one at a time: time from the signal's
 *    commit (its call returned) to the `finish` handler starting, and to the run's completion.
 * 3. Timers: runs of `before -> sleep -> after` whose due times are spread over a few seconds
 *    (computed by the worker, as in production), then a burst whose waits all fall due at the same
 *    moment (set with SQL, as tests/worker/waits_test.ts does): time from the due time to the
 *    `after` handler starting. The heartbeat interval bounds it: a beat sweeps batches of 100 due
 *    waits while they come back full, for at most half an interval.
 *
 * Options:
 *   --runs 10000         waiting runs of the idle window and the signal sample's population
 *   --window 10          seconds of each idle window
 *   --signals 500        signals sent, one at a time
 *   --timers 200         sleeping runs with due times spread over --spread seconds
 *   --spread 5           seconds the timers' due times are spread over
 *   --burst 1000         sleeping runs due at the same moment; 0 skips the burst
 *   --heartbeat-ms 1000  the worker's heartbeatIntervalMs (the worker's default is 5000)
 *
 * Always a throwaway cluster, with `pg_stat_statements` (planning not tracked) and autovacuum off:
 * its WAL and buffer accesses would land in whichever window it ran during; the bench vacuums
 * before each window and analyzes as it starts runs.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { compileFlow } from "../src/client/compile_flow.ts";
import { sendSignal } from "../src/client/send_signal.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { Flow, signalPayload } from "../src/dsl/flow.ts";
import { startWorker } from "../src/worker/mod.ts";
import { benchDatabase } from "./_bench_database.ts";
import { type Cost, costMark, costSince } from "./_cost.ts";
import { loadAverage } from "./_machine.ts";
import { PROFILE_SETTINGS } from "./_pg_profile.ts";
import { duration, markdownTable, quantile, whole } from "./_stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    runs: { type: "string", default: "10000" },
    window: { type: "string", default: "10" },
    signals: { type: "string", default: "500" },
    timers: { type: "string", default: "200" },
    spread: { type: "string", default: "5" },
    burst: { type: "string", default: "1000" },
    "heartbeat-ms": { type: "string", default: "1000" },
  },
});
const options = {
  runs: Number(values.runs),
  window: Number(values.window),
  signals: Number(values.signals),
  timers: Number(values.timers),
  spread: Number(values.spread),
  burst: Number(values.burst),
  heartbeatMs: Number(values["heartbeat-ms"]),
};
for (
  const [name, value, min] of [
    ["runs", options.runs, 1],
    ["window", options.window, 1],
    ["signals", options.signals, 1],
    ["timers", options.timers, 1],
    ["spread", options.spread, 0],
    ["burst", options.burst, 0],
    ["heartbeat-ms", options.heartbeatMs, 1],
  ] as const
) {
  if (!Number.isInteger(value) || value < min) {
    throw new RangeError(
      `Cannot run bench:waits: --${name} must be an integer >= ${min}, got ${String(value)}`,
    );
  }
}
if (options.signals > options.runs) {
  throw new RangeError(
    `Cannot run bench:waits: --signals (${options.signals}) must be at most --runs (${options.runs})`,
  );
}

const log = (line: string) => console.error(`bench:waits: ${line}`);
const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Handler executions by step, counted by the handlers themselves. */
const executions = { prepare: 0, finish: 0, before: 0, after: 0 };
/** When each `finish` handler started (performance.now()), by the run's `n`. */
const finishStarted = new Map<number, number>();
const finishWaiters = new Map<number, () => void>();
/** How late each `after` handler started after its sleep's due time, in ms. */
const timerLatencies: number[] = [];

const approval = new Flow<{ n: number }>({ slug: "bench_approval" })
  .step({ slug: "prepare" }, (input) => {
    executions.prepare++;
    return { n: input.n };
  })
  // A timeout, as docs/waits.md's approval flow has: every waiting run is then also a timer row
  // the heartbeat's sweep has to look past.
  .waitForSignal({
    slug: "approval",
    dependsOn: ["prepare"],
    key: (deps) => `approval:${deps.prepare.n}`,
    payload: signalPayload<{ n: number }>(),
    timeoutSeconds: 3600,
    onTimeout: "fail",
  })
  .step({ slug: "finish", dependsOn: ["approval"] }, (deps) => {
    executions.finish++;
    finishStarted.set(deps.approval.n, performance.now());
    finishWaiters.get(deps.approval.n)?.();
    return deps.approval.n;
  });

const timer = new Flow<{ dueAt: number }>({ slug: "bench_timer" })
  .step({ slug: "before" }, (input) => {
    executions.before++;
    return { dueAt: input.dueAt };
  })
  .sleep({ slug: "pause", dependsOn: ["before"] }, (deps) => new Date(deps.before.dueAt))
  .step({ slug: "after", dependsOn: ["pause"] }, (deps) => {
    executions.after++;
    timerLatencies.push(Date.now() - Date.parse(deps.pause));
    return null;
  });

const loadBefore = await loadAverage();
const began = performance.now();
await using db = await benchDatabase({
  throwaway: true,
  // Planning not tracked: its buffer accesses (catalog lookups) would count in with the
  // execution's, and they depend on when a session last planned, not on the waits.
  settings: { ...PROFILE_SETTINGS, "pg_stat_statements.track_planning": "off", autovacuum: "off" },
});
log(`database ready: ${db.server}, PGMQ ${db.pgmq}`);
const admin = postgres(db.url, { max: 2, prepare: false, onnotice: () => {} });

const workerOptions = {
  connectionString: db.url,
  maxConcurrent: 50,
  heartbeatIntervalMs: options.heartbeatMs,
  logLevel: "warn" as const,
  env: {},
};

async function count(query: Promise<{ n: number }[]>): Promise<number> {
  const [{ n }] = await query;
  return n;
}

const waitingSteps = (step: string) =>
  count(admin<{ n: number }[]>`
    select count(*)::int as n from sluice.step_states
    where step_slug = ${step} and status = 'waiting'`);

const runsStarted = (flowSlug: string) =>
  count(admin<{ n: number }[]>`
    select count(*)::int as n from sluice.runs
    where flow_slug = ${flowSlug} and status = 'started'`);

/** Polls `done` every 200 ms; throws after `timeoutMs`, naming what was awaited. */
async function until(what: string, done: () => Promise<boolean>, timeoutMs = 600_000) {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) {
      throw new Error(`bench:waits: gave up after ${timeoutMs} ms waiting for ${what}`);
    }
    await sleepMs(200);
  }
}

/** Starts runs of `flowSlug` in SQL, 1,000 per statement, the input an SQL expression of `i`. */
async function startMany(flowSlug: string, total: number, inputSql: string) {
  for (let from = 0; from < total; from += 1000) {
    const to = Math.min(total, from + 1000) - 1;
    await admin.unsafe(
      `select sluice.start_flow($1, ${inputSql}) from generate_series($2::int, $3::int) i`,
      [flowSlug, from, to],
    );
    // Autovacuum is off: keep the planner's statistics as its analyze would.
    await admin`analyze`;
  }
}

/** One idle window's figures. */
interface Window {
  label: string;
  polls: number;
  pollBuffers: number;
  pollMs: number;
  releases: number;
  releaseBuffers: number;
  releaseMs: number;
  lookupBuffers: number;
  claims: number;
  handlerRuns: number;
  statements: number;
  walBytes: number;
  load: string;
}

const attempts = () =>
  count(admin<{ n: number }[]>`
    select coalesce(sum(attempts_count), 0)::int as n from sluice.step_tasks`);

const handlerTotal = () => Object.values(executions).reduce((a, b) => a + b, 0);

/** The worker idles for `--window` seconds; counts what it claims and what its polls cost. */
async function idleWindow(waiting: number): Promise<Window> {
  await admin`vacuum analyze`;
  // Outside the window: the vacuum's own WAL, and the first polls and beats after it, which plan
  // their statements again (the new statistics invalidate every session's cached plans), on each
  // connection of the worker's pool.
  await sleepMs(Math.max(6000, 6 * options.heartbeatMs));
  const claimsBefore = await attempts();
  const handlersBefore = handlerTotal();
  const mark = await costMark(admin);
  await sleepMs(options.window * 1000);
  const statement = async (pattern: string, toplevel = true) => {
    const [row] = await admin<{ calls: number; buffers: number; ms: number }[]>`
      select coalesce(sum(calls), 0)::int as calls,
        coalesce(sum(shared_blks_hit + shared_blks_read)::float8 / nullif(sum(calls), 0), 0)
          as buffers,
        coalesce(sum(total_exec_time) / nullif(sum(calls), 0), 0) as ms
      from pg_stat_statements
      where toplevel = ${toplevel} and query like ${pattern}
        and dbid = (select oid from pg_database where datname = current_database())`;
    return row;
  };
  const poll = await statement("%sluice.start_tasks(%");
  const release = await statement("%sluice.release_due_waits(%");
  // The sweep's lookup of due waits inside release_due_waits, alone: its execution's buffers,
  // without the planning of the function's statements that the call's figure includes.
  const lookup = await statement("%ss.wait_until <= now()%", false);
  const cost = await costSince(admin, mark);
  return {
    label: whole(waiting),
    polls: poll.calls,
    pollBuffers: poll.buffers,
    pollMs: poll.ms,
    releases: release.calls,
    releaseBuffers: release.buffers,
    releaseMs: release.ms,
    lookupBuffers: lookup.buffers,
    claims: (await attempts()) - claimsBefore,
    handlerRuns: handlerTotal() - handlersBefore,
    statements: cost.clientStatements + cost.nestedStatements,
    walBytes: cost.walBytes,
    load: await loadAverage(),
  };
}

/**
 * Due time to release of the sleeps whose run input has `dueAt` in [from, to]: the sleep step's
 * `completed_at` is the releasing transaction's start.
 */
async function dueToReleased(from: number, to: number): Promise<number[]> {
  const rows = await admin<{ ms: number }[]>`
    select extract(epoch from ss.completed_at - ss.wait_until)::float8 * 1000 as ms
    from sluice.step_states ss join sluice.runs r using (run_id)
    where ss.step_slug = 'pause' and ss.status = 'completed'
      and (r.input ->> 'dueAt')::bigint between ${from} and ${to}`;
  return rows.map((row) => row.ms);
}

/** One release measurement's figures. */
interface Release {
  label: string;
  released: number;
  latencies: number[];
  toCompletion: number[];
  /** For timers: due time to the release's transaction. */
  toRelease: number[];
  cost: Cost;
  load: string;
  note: string;
}

let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
const windows: Window[] = [];
const releases: Release[] = [];
let setupMs = 0;
let startMs = 0;
const sendMs: number[] = [];
let mismatched = 0;
try {
  await compileFlow(admin, approval);
  await compileFlow(admin, timer);
  worker = await startWorker(approval, workerOptions);

  // Warm-up: every statement of the approval path has run on the worker's connections before
  // the first window.
  const warm = 20;
  for (let i = 1; i <= warm; i++) await startFlow(admin, approval, { n: -i });
  await until("warm-up waits", async () => (await waitingSteps("approval")) === warm);
  for (let i = 1; i <= warm; i++) {
    await sendSignal(admin, { key: `approval:${-i}`, payload: { n: -i }, signalId: `w${i}` });
  }
  await until("warm-up runs to complete", async () => (await runsStarted("bench_approval")) === 0);

  log(`idle window with no waiting run (${options.window} s)`);
  windows.push({ ...(await idleWindow(0)), label: "0 (fresh tables)" });

  log(`starting ${whole(options.runs)} runs`);
  const setupStart = performance.now();
  await startMany("bench_approval", options.runs, "jsonb_build_object('n', i)");
  startMs = performance.now() - setupStart;
  await until(
    `${options.runs} waiting runs`,
    async () => (await waitingSteps("approval")) === options.runs,
  );
  setupMs = performance.now() - setupStart;
  log(
    `${whole(options.runs)} runs started in ${duration(startMs)}, waiting after ${
      duration(setupMs)
    }`,
  );

  log(`idle window with ${whole(options.runs)} waiting runs (${options.window} s)`);
  windows.push(await idleWindow(options.runs));

  // Signals, one at a time, to runs spread evenly over the waiting ones.
  log(`sending ${options.signals} signals one at a time`);
  const sample = Array.from(
    { length: options.signals },
    (_, i) => Math.floor(i * options.runs / options.signals),
  );
  const signalMark = await costMark(admin);
  const latencies: number[] = [];
  const committedAt = new Map<number, number>();
  for (const n of sample) {
    const started = new Promise<void>((resolve) => finishWaiters.set(n, resolve));
    const sendStart = performance.now();
    const result = await sendSignal(admin, {
      key: `approval:${n}`,
      payload: { n },
      signalId: `s${n}`,
    });
    const committed = performance.now();
    committedAt.set(n, Date.now());
    sendMs.push(committed - sendStart);
    if (result.released !== 1) mismatched++;
    await started;
    finishWaiters.delete(n);
    latencies.push(finishStarted.get(n)! - committed);
  }
  await until(
    "the signalled runs to complete",
    async () => (await runsStarted("bench_approval")) === options.runs - options.signals,
  );
  const completed = await admin<{ n: number; at: number }[]>`
    select (input ->> 'n')::int as n, extract(epoch from completed_at)::float8 * 1000 as at
    from sluice.runs where flow_slug = 'bench_approval' and status = 'completed'
      and (input ->> 'n')::int >= 0`;
  releases.push({
    label: "signal: send_signal commit → next step's handler",
    released: options.signals,
    latencies,
    toCompletion: completed.map((row) => row.at - committedAt.get(row.n)!),
    toRelease: [],
    cost: await costSince(admin, signalMark),
    load: await loadAverage(),
    note: `${whole(options.runs - options.signals)} other runs waiting`,
  });

  // The control: no waiting run, but the tables the waiting runs left (their runs, states and
  // completed first tasks): what the poll costs because of table size rather than waits.
  const [{ cancelled }] = await admin<{ cancelled: number }[]>`
    select count(*)::int as cancelled from sluice.cancel_run_set(
      array(select run_id from sluice.runs
        where flow_slug = 'bench_approval' and status = 'started'),
      'bench:waits control window')`;
  log(`cancelled the ${whole(cancelled)} other waiting runs; control window (${options.window} s)`);
  windows.push({ ...(await idleWindow(0)), label: `0 (the ${whole(cancelled)} others cancelled)` });

  await worker.stop();
  worker = undefined;

  // Timers due over --spread seconds, computed by the worker that completes `before`.
  worker = await startWorker(timer, workerOptions);
  await startFlow(admin, timer, { dueAt: Date.now() });
  await until("the timer warm-up run", () => Promise.resolve(executions.after === 1));
  timerLatencies.length = 0;
  log(`${options.timers} timers due over ${options.spread} s`);
  const lead = 4000;
  const first = Date.now() + lead;
  await startMany(
    "bench_timer",
    options.timers,
    `jsonb_build_object('dueAt', ${first}::bigint + (i * ${
      options.spread * 1000
    }::bigint / ${options.timers}))`,
  );
  // The cost counted from here is the releases' (and their next steps'), as for the signals.
  await until(`${options.timers} sleeping runs`, async () => {
    const [{ n }] = await admin<{ n: number }[]>`
      select count(*)::int as n from sluice.step_states
      where step_slug = 'before' and status = 'completed'`;
    return n === options.timers + 1;
  });
  const timerMark = await costMark(admin);
  const [{ released }] = await admin<{ released: number }[]>`
    select count(*)::int as released from sluice.step_states
    where step_slug = 'pause' and status = 'completed'`;
  if (released > 1) log(`${released - 1} timers were released before the cost mark`);
  await until("the timers to complete", async () => (await runsStarted("bench_timer")) === 0);
  const [{ early }] = await admin<{ early: number }[]>`
    select count(*)::int as early from sluice.step_states ss
    join sluice.runs r using (run_id)
    where ss.step_slug = 'pause' and ss.waiting_at >= ss.wait_until
      and (r.input ->> 'dueAt')::bigint >= ${first}`;
  releases.push({
    label: `timers due over ${options.spread} s: due time → next step's handler`,
    released: options.timers,
    latencies: [...timerLatencies],
    toCompletion: [],
    toRelease: await dueToReleased(first, first + options.spread * 1000),
    cost: await costSince(admin, timerMark),
    load: await loadAverage(),
    note: early === 0
      ? "every wait started before its due time"
      : `${early} waits started after their due time (a ${lead} ms lead was too short)`,
  });

  if (options.burst > 0) {
    timerLatencies.length = 0;
    log(`a burst of ${options.burst} timers due at once`);
    const burstInput = Date.now() + 3_600_000;
    await startMany(
      "bench_timer",
      options.burst,
      `jsonb_build_object('dueAt', ${burstInput}::bigint)`,
    );
    await until(
      `${options.burst} sleeping runs`,
      async () => (await waitingSteps("pause")) === options.burst,
    );
    const burstMark = await costMark(admin);
    // The due time is the sleep's output (what the `after` handler measures from).
    await admin`update sluice.step_states set wait_until = now() + interval '1 second'
      where step_slug = 'pause' and status = 'waiting'`;
    await until("the burst to complete", async () => (await runsStarted("bench_timer")) === 0);
    releases.push({
      label: `burst: ${whole(options.burst)} due at once → next step's handler`,
      released: options.burst,
      latencies: [...timerLatencies],
      toCompletion: [],
      toRelease: await dueToReleased(burstInput, burstInput),
      cost: await costSince(admin, burstMark),
      load: await loadAverage(),
      note: "a beat sweeps while batches of 100 come back full, for half an interval",
    });
  }
} finally {
  await worker?.stop();
  await admin.end();
}

const loadAfter = await loadAverage();
const minutes = (performance.now() - began) / 60_000;
console.log(
  `${db.server}, PGMQ ${db.pgmq}; autovacuum off (vacuum before each window); ` +
    `${navigator.hardwareConcurrency} CPUs; load average before ${loadBefore}, after ${loadAfter}; ` +
    `${minutes.toFixed(1)} min. One worker, maxConcurrent 50, heartbeatIntervalMs ` +
    `${options.heartbeatMs}, LISTEN on (idle poll every 1 s). ${whole(options.runs)} runs of ` +
    `prepare -> waitForSignal (1 h timeout) -> finish reached 'waiting' in ${duration(setupMs)}.`,
);
console.log("");
console.log(`Idle worker, ${options.window} s window:`);
console.log("");
console.log(markdownTable(
  [
    "waiting runs",
    "claims",
    "handler executions",
    "polls",
    "poll buffers / call",
    "poll ms / call",
    "release_due_waits calls",
    "its buffers / call",
    "its ms / call",
    "its due-wait lookup buffers / call",
    "statements (all, nested included)",
    "WAL bytes",
    "load",
  ],
  windows.map((w) => [
    w.label,
    String(w.claims),
    String(w.handlerRuns),
    String(w.polls),
    w.pollBuffers.toFixed(1),
    w.pollMs.toFixed(3),
    String(w.releases),
    w.releaseBuffers.toFixed(1),
    w.releaseMs.toFixed(3),
    w.lookupBuffers.toFixed(1),
    whole(w.statements),
    whole(w.walBytes),
    w.load,
  ]),
));
console.log("");
console.log(`Releases (heartbeatIntervalMs ${options.heartbeatMs}):`);
console.log("");
const p = (values: number[], q: number) => duration(quantile(values, q));
console.log(markdownTable(
  [
    "release",
    "waits",
    "latency p50 / p95 / max",
    "of it, due → released p50 / p95",
    "to run completed p50 / p95",
    "statements / wait (release to run completed)",
    "WAL bytes / wait",
    "load",
    "note",
  ],
  releases.map((r) => [
    r.label,
    whole(r.released),
    `${p(r.latencies, 0.5)} / ${p(r.latencies, 0.95)} / ${p(r.latencies, 1)}`,
    r.toRelease.length === 0 ? "–" : `${p(r.toRelease, 0.5)} / ${p(r.toRelease, 0.95)}`,
    r.toCompletion.length === 0 ? "–" : `${p(r.toCompletion, 0.5)} / ${p(r.toCompletion, 0.95)}`,
    ((r.cost.clientStatements + r.cost.nestedStatements) / r.released).toFixed(1),
    whole(r.cost.walBytes / r.released),
    r.load,
    r.note,
  ]),
));
console.log("");
console.log(
  `sendSignal round trip p50 / p95: ${p(sendMs, 0.5)} / ${p(sendMs, 0.95)}; ` +
    `signals that released other than 1 wait: ${mismatched}.`,
);
