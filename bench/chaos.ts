/**
 * `deno task bench:chaos [--runs N] [--seconds S] [--smoke]`: runs of a fan-out flow with random
 * handler failures, worked by 4 worker processes while the benchmark SIGKILLs one every 2–5 s,
 * freezes one past the stall window and restarts PostgreSQL in immediate mode; then audits the
 * engine's tables against the handlers' own execution log. Exits 1 when a defect counter is not
 * zero. See bench/README.md for what each counter means.
 *
 * Options:
 *   --runs 1000     runs, started evenly over the chaos phase
 *   --seconds 300   deadline: the runs not terminal by then are counted as such
 *   --smoke         short run for CI: --runs 50 --seconds 60 (under 2 minutes in all)
 *
 * Always starts a throwaway cluster of its own (it restarts it), also with DATABASE_URL set.
 *
 * @module
 */
import { parseArgs } from "node:util";
import postgres from "postgres";
import { compileFlow } from "../src/client/compile_flow.ts";
import { startFlow } from "../src/client/start_flow.ts";
import { benchDatabase } from "./_bench_database.ts";
import {
  audit,
  deadlocks,
  executionsInFlight,
  failureCauses,
  firstCompletionSinceStart,
  reclaimedAndRunning,
  RECOVERY_SLACK_SECONDS,
  runCounts,
  stuckTasks,
} from "./_chaos_audit.ts";
import {
  CHAOS_SCHEMA,
  chaosFlow,
  FAN_OUT,
  MAX_ATTEMPTS,
  MAX_CONCURRENT,
  STALL_WINDOW_SECONDS,
} from "./_chaos_flow.ts";
import { WorkerFleet, type WorkerProcess } from "./_chaos_fleet.ts";
import { restartImmediate } from "./_chaos_restart.ts";
import { loadAverage } from "./_machine.ts";
import { duration, markdownTable, whole } from "./_stats.ts";

const WORKERS = 4;
const KILL_EVERY_SECONDS = [2, 5];
/**
 * Longest time a frozen worker stays stopped beyond the stall window; it is woken earlier once
 * another worker runs one of its stranded tasks.
 */
const FREEZE_PAST_WINDOW_SECONDS = 10;
/**
 * The chaos phase (runs started, workers killed) ends this long before the deadline: long enough
 * for the tasks of the last killed worker to be recovered and finished.
 */
const TAIL_SECONDS = STALL_WINDOW_SECONDS + RECOVERY_SLACK_SECONDS + 5;
const MIN_CHAOS_SECONDS = 10;
const TICK_MS = 200;
/** Defects described on stderr, at most. */
const EXAMPLES = 10;
const STUCK_SAMPLE_MS = 5000;

function log(message: string): void {
  console.error(`bench: ${message}`);
}

function options(args: string[]): { runs: number; seconds: number } {
  const { values } = parseArgs({
    args,
    options: {
      runs: { type: "string" },
      seconds: { type: "string" },
      smoke: { type: "boolean", default: false },
    },
  });
  const runs = Number(values.runs ?? (values.smoke ? 50 : 1000));
  const seconds = Number(values.seconds ?? (values.smoke ? 60 : 300));
  if (!Number.isInteger(runs) || runs < 1) {
    throw new Error(`Cannot run bench:chaos: --runs must be an integer >= 1, got ${values.runs}`);
  }
  const least = TAIL_SECONDS + MIN_CHAOS_SECONDS;
  if (!Number.isFinite(seconds) || seconds < least) {
    throw new Error(
      `Cannot run bench:chaos: --seconds must be >= ${least} (${MIN_CHAOS_SECONDS} s of chaos, ` +
        `then ${TAIL_SECONDS} s for recovery past the ${STALL_WINDOW_SECONDS} s stall window), ` +
        `got ${values.seconds}`,
    );
  }
  return { runs, seconds };
}

function pick<T>(items: T[]): T | undefined {
  return items[Math.floor(Math.random() * items.length)];
}

function killDelayMs(): number {
  const [low, high] = KILL_EVERY_SECONDS;
  return (low + Math.random() * (high - low)) * 1000;
}

/** Resolves once `sql` answers again (after the restart). */
async function reachable(sql: postgres.Sql): Promise<void> {
  for (;;) {
    try {
      await sql`select 1`;
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

interface Freeze {
  worker: WorkerProcess;
  at: Date;
  /** Seconds into the benchmark when it is thawed at the latest. */
  until: number;
  thawedAt?: Date;
}

interface Restart {
  /** When `pg_ctl restart` was called. */
  at: Date;
  tookMs: number;
  /** `pg_stat_database.deadlocks` before and right after: crash recovery resets it. */
  deadlocksBefore: number;
  deadlocksAfter: number;
}

/** Freezes a worker while one of its handlers runs, so that the freeze strands work. */
async function freezeBusyWorker(
  sql: postgres.Sql,
  fleet: WorkerFleet,
  t: number,
): Promise<Freeze | undefined> {
  const [busy] = await sql<{ worker: string }[]>`
    select worker from chaos.executions
    where ended_at is null and started_at > now() - interval '1 second'
    order by started_at desc limit 1`;
  const worker = fleet.running().find((w) => w.name === busy?.worker);
  if (worker === undefined) return undefined;
  fleet.freeze(worker);
  log(`froze ${worker.name} at ${t.toFixed(1)} s`);
  const until = t + STALL_WINDOW_SECONDS + FREEZE_PAST_WINDOW_SECONDS;
  return { worker, at: new Date(), until };
}

async function restartServer(
  sql: postgres.Sql,
  dataDir: string,
  t: number,
): Promise<Restart> {
  const deadlocksBefore = await deadlocks(sql);
  const at = new Date();
  await restartImmediate(dataDir);
  const tookMs = Date.now() - at.getTime();
  await reachable(sql);
  log(`restarted PostgreSQL at ${t.toFixed(1)} s (pg_ctl took ${duration(tookMs)})`);
  return { at, tookMs, deadlocksBefore, deadlocksAfter: await deadlocks(sql) };
}

async function main(): Promise<number> {
  const { runs, seconds } = options(Deno.args);
  const chaosSeconds = seconds - TAIL_SECONDS;
  // Commits must survive the immediate restart: asynchronous commit would lose the last ones,
  // engine state and execution log alike. fsync stays off: the machine itself does not crash.
  await using db = await benchDatabase({ throwaway: true, settings: { synchronous_commit: "on" } });
  // One connection: once it answers after the restart, every query of the benchmark does.
  const sql = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  await sql.unsafe(CHAOS_SCHEMA);
  await compileFlow(sql, chaosFlow({ sql, worker: "", endsPath: "" }));
  const dir = await Deno.makeTempDir({ prefix: "sluice-chaos-" });
  const loadBefore = await loadAverage();
  log(
    `${runs} runs, deadline ${seconds} s, chaos for ${chaosSeconds} s; worker logs: ${dir}/workers.log`,
  );

  await using fleet = new WorkerFleet(db.url, dir);
  fleet.start(WORKERS);
  const began = Date.now();
  const elapsed = () => (Date.now() - began) / 1000;
  const input = Array.from({ length: FAN_OUT }, (_, i) => i);
  const stuck = new Set<string>();
  let started = 0;
  let kills = 0;
  let nextKill = killDelayMs() / 1000;
  let nextSample = 0;
  let frozen: Freeze | undefined;
  let restart: Restart | undefined;
  let terminal = false;

  while (elapsed() < seconds && !(terminal && frozen?.thawedAt !== undefined)) {
    const t = elapsed();
    for (const due = Math.ceil(runs * Math.min(1, t / chaosSeconds)); started < due; started++) {
      await startFlow(sql, "chaos", input);
    }
    if (t < chaosSeconds && t >= nextKill) {
      const victim = pick(fleet.running());
      if (victim !== undefined) {
        fleet.kill(victim);
        kills++;
      }
      nextKill = t + killDelayMs() / 1000;
    }
    if (frozen === undefined && t >= 1) frozen = await freezeBusyWorker(sql, fleet, t);
    if (
      frozen !== undefined && frozen.thawedAt === undefined &&
      (t >= frozen.until || await reclaimedAndRunning(sql, frozen.worker.name, frozen.at))
    ) {
      fleet.thaw(frozen.worker);
      frozen.thawedAt = new Date();
      log(`thawed ${frozen.worker.name} at ${t.toFixed(1)} s`);
    }
    if (restart === undefined && t >= chaosSeconds / 2) {
      restart = await restartServer(sql, db.cluster!.dataDir, t);
    }
    if (Date.now() - began >= nextSample) {
      nextSample += STUCK_SAMPLE_MS;
      for (const key of await stuckTasks(sql)) stuck.add(key);
    }
    terminal = started === runs && (await runCounts(sql)).started === 0;
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  const wallMs = Date.now() - began;
  await fleet.stop();
  const loadAfter = await loadAverage();
  for (const key of await stuckTasks(sql)) stuck.add(key);
  await fleet.record(sql);
  const found = await audit(sql);
  for (const line of [...found.notBacked, ...found.overlapping].slice(0, EXAMPLES)) {
    log(`defect: ${line}`);
  }
  for (const cause of await failureCauses(sql)) log(`failed runs: ${cause}`);
  const firstAfterRestart = restart && await firstCompletionSinceStart(sql);
  const counts = await runCounts(sql);
  const defects: [string, number][] = [
    ["runs not terminal at the deadline", counts.started],
    ["tasks lost", found.lost],
    [
      `tasks stuck \`started\` past their recovery window (${
        STALL_WINDOW_SECONDS + RECOVERY_SLACK_SECONDS
      } s)`,
      stuck.size,
    ],
    ["completions not backed by a recorded successful execution", found.notBacked.length],
    ["overlapping executions of one task (pairs)", found.overlapping.length],
    [`tasks with attempts above maxAttempts (${MAX_ATTEMPTS})`, found.aboveMaxAttempts],
    [
      "deadlocks (pg_stat_database)",
      (restart?.deadlocksBefore ?? 0) + (await deadlocks(sql)) - (restart?.deadlocksAfter ?? 0),
    ],
  ];
  const info = [
    [
      "time from the restart to the first completion",
      firstAfterRestart === undefined
        ? "no completion"
        : duration(firstAfterRestart.getTime() - restart!.at.getTime()),
    ],
    ["executions recorded", whole(found.executions)],
    ["workers SIGKILLed / exited on their own", `${kills} / ${fleet.unexpectedExits}`],
    [
      "freeze (SIGSTOP → SIGCONT), executions in flight",
      frozen?.thawedAt === undefined
        ? "none"
        : `${duration(frozen.thawedAt.getTime() - frozen.at.getTime())}, ${await executionsInFlight(
          sql,
          frozen.worker.name,
          frozen.at,
        )}`,
    ],
    [
      "`pg_ctl restart -m immediate` took",
      restart === undefined ? "not reached" : duration(restart.tookMs),
    ],
    ["wall time", duration(wallMs)],
  ];
  await sql.end();

  console.log(
    `\`deno task bench:chaos --runs ${runs} --seconds ${seconds}\` — ${db.server}, PGMQ ${db.pgmq}; ` +
      `${WORKERS} worker processes × ${MAX_CONCURRENT}; ${FAN_OUT + 1} tasks per run, ` +
      `${MAX_ATTEMPTS} attempts, stall window ${STALL_WINDOW_SECONDS} s; ` +
      `load average before ${loadBefore}, after ${loadAfter}.\n`,
  );
  const completed = `${whole(counts.completed)} / ${whole(counts.failed)} / ${
    whole(counts.started)
  }`;
  console.log(markdownTable(["measure", "value"], [
    ["runs completed / failed / not terminal at the deadline", completed],
    ...defects.slice(1).map(([label, value]) => [label, whole(value)]),
    ...info,
  ]));
  const failing = defects.filter(([, value]) => value > 0);
  if (failing.length > 0) {
    console.log(`\nDefects: ${failing.map(([label, value]) => `${label}: ${value}`).join("; ")}`);
  }
  return failing.length > 0 ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main());
