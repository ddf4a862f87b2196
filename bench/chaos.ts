/**
 * `deno task bench:chaos [--runs N] [--seconds S] [--smoke]`: runs of a fan-out flow and of a
 * subflow shape (a parent whose map subflow starts child runs) with random handler failures, worked by 4 worker processes while the benchmark SIGKILLs one every 2–5 s,
 * freezes one past the stall window, recompiles a flow in development under a frozen worker of its
 * old shape and restarts PostgreSQL in immediate mode; then audits the
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
import { waitForRun } from "../src/client/wait_for_run.ts";
import { RunCancelledError, RunFailedError, RunTimeoutError } from "../src/client/errors.ts";
import { connect } from "../src/db/connect.ts";
import { getAlias } from "../src/deploy/aliases.ts";
import { defineDeployedFlow } from "../src/dsl/deployed_flow.ts";
import { Flow } from "../src/dsl/flow.ts";
import { startWorker, type WorkerHandle } from "../src/worker/mod.ts";
import { benchDatabase } from "./_bench_database.ts";
import { DEV_FLOW, devShapeB } from "./_chaos_dev_flow.ts";
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
  subflowAudit,
} from "./_chaos_audit.ts";
import {
  CHAOS_SCHEMA,
  chaosChildFlow,
  chaosFlow,
  chaosSubflowFlow,
  FAN_OUT,
  MAX_ATTEMPTS,
  MAX_CONCURRENT,
  STALL_WINDOW_SECONDS,
  SUBFLOW_EVERY,
  SUBFLOW_FAN_OUT,
  SUBFLOW_FLOW,
} from "./_chaos_flow.ts";
import { WorkerFleet, type WorkerProcess } from "./_chaos_fleet.ts";
import { CONTROL_SETTINGS, RunControl } from "./_chaos_control.ts";
import { restartImmediate } from "./_chaos_restart.ts";
import { loadAverage } from "./_machine.ts";
import {
  CONCURRENCY_KEYS,
  CONCURRENCY_LIMIT,
  concurrencyKeyOf,
  heldTasksOfEndedRuns,
  mostSlotsInUse,
} from "./_chaos_limits.ts";
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
/** Every this many seconds of the chaos phase, the LISTEN connections are cut or one is frozen. */
const LISTEN_FAULT_EVERY_SECONDS = 3;
/** How long a frozen LISTEN backend stays stopped (SIGSTOP → SIGCONT). */
const LISTEN_FREEZE_MS = 2000;

/** Every this many seconds of the chaos phase, the old version's worker respawns. */
const RESPAWN_EVERY_SECONDS = 2;
const ALIAS = "chaos_alias";
const aliasV1 = defineDeployedFlow(
  new Flow<number>({ slug: "chaos_alias" }).step({ slug: "s" }, (n) => n),
  { alias: ALIAS },
);
const aliasV2 = defineDeployedFlow(
  new Flow<number>({ slug: "chaos_alias_v2" }).step({ slug: "s" }, (n) => n + 1),
  { alias: ALIAS },
);

/**
 * An alias switch with old-version respawns: V1's and then V2's worker start with
 * `activate: "on-startup"` (V2 takes the alias); V1's worker then restarts again and again, as an
 * Edge respawn during a version drain does. Each time the alias points back at V1 afterwards, it
 * moved back.
 */
class AliasSwitch {
  #sql: postgres.Sql;
  #v1: WorkerHandle | undefined;
  #v2: WorkerHandle | undefined;
  respawns = 0;
  /** Activations that pointed the alias back at V1 (distinct generations). */
  movedBack = 0;
  #lastMovedBack: number | undefined;
  constructor(sql: postgres.Sql) {
    this.#sql = sql;
  }
  async begin(): Promise<void> {
    const options = { sql: this.#sql, activate: "on-startup", logLevel: "error" } as const;
    this.#v1 = await startWorker(aliasV1, options);
    this.#v2 = await startWorker(aliasV2, options);
  }
  async respawnOld(): Promise<void> {
    try {
      await this.#v1?.stop({ graceMs: 1000 });
      this.#v1 = await startWorker(aliasV1, {
        sql: this.#sql,
        activate: "on-startup",
        logLevel: "error",
      });
      this.respawns++;
      const alias = await getAlias(this.#sql, ALIAS);
      if (alias?.flowSlug === "chaos_alias" && alias.generation !== this.#lastMovedBack) {
        this.#lastMovedBack = alias.generation;
        this.movedBack++;
        log(`defect: alias ${ALIAS} moved back to chaos_alias (generation ${alias.generation})`);
      }
    } catch {
      // A respawn during the restart or a cut: the next one tries again.
      this.#v1 = undefined;
    }
  }
  async end(): Promise<void> {
    await Promise.allSettled([
      this.#v1?.stop({ graceMs: 1000 }),
      this.#v2?.stop({ graceMs: 1000 }),
    ]);
  }
}

/** A worker counts as live this long after its last heartbeat (`sluice.worker_heartbeat_ttl()`). */
const HEARTBEAT_TTL_SECONDS = 30;
/** How long the thawed old worker has the new shape's runs to itself, at most. */
const OLD_WORKER_ALONE_MS = 10_000;
/** Runs of the new shape started right after the development recompile. */
const DEV_RUNS = 5;

/**
 * A development recompile with a frozen worker: a worker subprocess on shape A of `chaos_dev` is
 * frozen (SIGSTOP) until its heartbeat has expired, as at a debugger breakpoint; the flow is
 * recompiled in development with shape B and runs of B are started; then the old worker is
 * thawed and a worker on B starts. The old worker is fenced: every output of it accepted after
 * the recompile is a defect, and so is a restart pause on its worker function.
 */
class DevRecompile {
  #sql: postgres.Sql;
  #url: string;
  #child: Deno.ChildProcess | undefined;
  #lines: ReadableStreamDefaultReader<string> | undefined;
  #buffered = "";
  #oldWorker: string | undefined;
  #frozenAt: number | undefined;
  #thawedAt: number | undefined;
  /** Settles once the thawed old worker printed its `DONE` line (or exited). */
  #oldEnded: Promise<unknown> = Promise.resolve();
  #newWorker: WorkerHandle | undefined;
  #runIds: string[] = [];
  state: "idle" | "frozen" | "thawed" | "recompiled" = "idle";
  /** How the old worker ended (`DONE <status>`), or why it was not seen to. */
  oldEnd = "not reached";
  runsCompleted = 0;
  fencedOutputs = 0;
  restartPaused = 0;
  constructor(sql: postgres.Sql, url: string) {
    this.#sql = sql;
    this.#url = url;
  }
  async begin(): Promise<void> {
    this.#child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./_chaos_dev_worker.ts", import.meta.url).pathname, this.#url],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    this.#lines = this.#child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    if (await this.#nextLine() !== "READY") throw new Error("the chaos_dev worker did not start");
    const [row] = await this.#sql<{ worker_id: string }[]>`
      select worker_id::text from sluice.workers where flow_slug = ${DEV_FLOW}`;
    this.#oldWorker = row.worker_id;
  }
  async tick(producer: postgres.Sql, t: number): Promise<void> {
    if (this.state === "idle") {
      this.#child!.kill("SIGSTOP");
      this.#frozenAt = Date.now();
      this.state = "frozen";
      log(`froze the chaos_dev worker (shape A) at ${t.toFixed(1)} s`);
    } else if (
      this.state === "frozen" && Date.now() - this.#frozenAt! > (HEARTBEAT_TTL_SECONDS + 2) * 1000
    ) {
      try {
        const { outcome } = await compileFlow(producer, devShapeB(), {
          environment: "development",
        });
        for (let i = 0; i < DEV_RUNS; i++) {
          this.#runIds.push(await startFlow(producer, DEV_FLOW, i));
        }
        log(`chaos_dev ${outcome} in development at ${t.toFixed(1)} s; thawing its old worker`);
        this.state = "thawed";
      } catch (error) {
        log(`development recompile failed (retried next tick): ${error}`);
        return;
      } finally {
        if (this.state === "thawed") this.#child!.kill("SIGCONT");
      }
      this.#thawedAt = Date.now();
      this.#oldEnded = this.#nextLine().then(
        (line) => this.oldEnd = line,
        () => this.oldEnd = "exited",
      );
    } else if (
      this.state === "thawed" &&
      (this.oldEnd !== "not reached" || Date.now() - this.#thawedAt! > OLD_WORKER_ALONE_MS)
    ) {
      // The old worker had the new runs to itself until it stopped (or for a while): a stale
      // worker that is not fenced claims them now.
      this.#newWorker = await startWorker(devShapeB(), { sql: producer, logLevel: "error" });
      this.state = "recompiled";
    }
  }
  async end(producer: postgres.Sql): Promise<void> {
    if (this.#child === undefined) return;
    if (this.state === "frozen") this.#child.kill("SIGCONT");
    const settled = await Promise.allSettled(
      this.#runIds.map((runId) => waitForRun(producer, runId, { timeoutMs: 30_000 })),
    );
    this.runsCompleted = settled.filter((r) => r.status === "fulfilled").length;
    await this.#newWorker?.stop({ graceMs: 1000 });
    let timer: number | undefined;
    await Promise.race([
      this.#oldEnded,
      new Promise((resolve) => timer = setTimeout(resolve, OLD_WORKER_ALONE_MS)),
    ]);
    clearTimeout(timer);
    if (this.oldEnd === "not reached") this.oldEnd = "still running";
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // It exited by itself, as a fenced worker does.
    }
    await this.#child.status;
    await this.#lines?.cancel().catch(() => {});
    const [row] = await this.#sql<{ outputs: number; paused: number }[]>`
      select
        (select count(*)::int from sluice.step_tasks
          where flow_slug = ${DEV_FLOW} and status = 'completed'
            and last_worker_id = ${this.#oldWorker!}::uuid) as outputs,
        (select count(*)::int from sluice.worker_functions wf
          join sluice.workers w on w.function_name = wf.function_name
          where w.worker_id = ${this.#oldWorker!}::uuid and wf.restart_paused_at is not null)
          as paused`;
    this.fencedOutputs = row.outputs;
    this.restartPaused = row.paused;
  }
  async #nextLine(): Promise<string> {
    while (!this.#buffered.includes("\n")) {
      const { value, done } = await this.#lines!.read();
      if (done) throw new Error("the chaos_dev worker exited");
      this.#buffered += value;
    }
    const end = this.#buffered.indexOf("\n");
    const line = this.#buffered.slice(0, end);
    this.#buffered = this.#buffered.slice(end + 1);
    return line;
  }
}

/** Watchers: one `waitForRun` per run on the producer's `connect()` pool, and how they ended. */
interface Watchers {
  pending: Set<string>;
  errors: string[];
  /** Runs whose watch timed out: a defect when the run did end by the deadline. */
  timedOut: string[];
  done: Promise<unknown>[];
}

function watch(pool: postgres.Sql, runId: string, watchers: Watchers, timeoutMs: number): void {
  watchers.pending.add(runId);
  watchers.done.push(
    waitForRun(pool, runId, { timeoutMs }).then(
      () => watchers.pending.delete(runId),
      (error) => {
        watchers.pending.delete(runId);
        // A failed run is an outcome (10% handler failures exhaust some runs), and so is a run
        // that run control cancelled: neither is a watcher error.
        if (error instanceof RunTimeoutError) watchers.timedOut.push(runId);
        else if (!(error instanceof RunFailedError) && !(error instanceof RunCancelledError)) {
          watchers.errors.push(`${runId}: ${error?.name}: ${error?.message}`);
        }
      },
    ),
  );
}

/** The backends that hold a LISTEN (workers' wake-ups and watchers), oldest first. */
async function listenBackends(sql: postgres.Sql): Promise<number[]> {
  const rows = await sql<{ pid: number }[]>`
    select pid from pg_stat_activity
    where datname = current_database() and pid <> pg_backend_pid()
      and query ilike 'listen %'
    order by backend_start`;
  return rows.map((row) => row.pid);
}

/**
 * Freezes one LISTEN backend (SIGSTOP) for a while, or cuts every LISTEN connection: freezes
 * first, then alternately. Returns false when there was no LISTEN backend to hit.
 */
async function listenFault(
  sql: postgres.Sql,
  round: number,
  counts: { cut: number; frozen: number },
): Promise<boolean> {
  const pids = await listenBackends(sql);
  if (pids.length === 0) return false;
  if (round % 2 === 1) {
    await sql`select pg_terminate_backend(pid) from unnest(${pids}::int[]) pid`;
    counts.cut += pids.length;
    return true;
  }
  const pid = pick(pids)!;
  try {
    Deno.kill(pid, "SIGSTOP");
  } catch {
    return false;
  }
  counts.frozen++;
  setTimeout(() => {
    try {
      Deno.kill(pid, "SIGCONT");
    } catch {
      // Gone meanwhile (the restart): nothing to wake.
    }
  }, LISTEN_FREEZE_MS);
  return true;
}

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
  await using db = await benchDatabase({
    throwaway: true,
    settings: { synchronous_commit: "on", ...CONTROL_SETTINGS },
  });
  // One connection: once it answers after the restart, every query of the benchmark does.
  const sql = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  await sql.unsafe(CHAOS_SCHEMA);
  const noLog = { sql, worker: "", endsPath: "" };
  await compileFlow(sql, chaosFlow(noLog));
  // The child before its parent: compiling a subflow refuses a child that is not compiled.
  await compileFlow(sql, chaosChildFlow(noLog));
  await compileFlow(sql, chaosSubflowFlow(noLog));
  const dir = await Deno.makeTempDir({ prefix: "sluice-chaos-" });
  const loadBefore = await loadAverage();
  log(
    `${runs} runs, deadline ${seconds} s, chaos for ${chaosSeconds} s; worker logs: ${dir}/workers.log`,
  );

  // Producer and watchers on a pool from sluice's own connect(), the documented pattern: a cut
  // connection must neither kill this process nor fail a watch.
  const producer = connect(db.url, { max: 4, applicationName: "chaos-producer" });
  const watchers: Watchers = { pending: new Set(), errors: [], timedOut: [], done: [] };
  const listenFaults = { cut: 0, frozen: 0 };
  let nextListenFault = LISTEN_FAULT_EVERY_SECONDS;
  let listenRound = 0;
  const aliasSwitch = new AliasSwitch(producer);
  await aliasSwitch.begin();
  const control = new RunControl(producer);
  await control.begin(sql);
  let controlDrained = false;
  const devRecompile = new DevRecompile(sql, db.url);
  await devRecompile.begin();
  let nextRespawn = RESPAWN_EVERY_SECONDS;
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
  // The concurrency limit, sampled from SQL at every tick.
  const limit = { most: 0, overSamples: 0, samples: 0 };
  let frozen: Freeze | undefined;
  let restart: Restart | undefined;
  let terminal = false;

  while (
    elapsed() < seconds &&
    !(terminal && frozen?.thawedAt !== undefined && devRecompile.state === "recompiled")
  ) {
    const t = elapsed();
    for (const due = Math.ceil(runs * Math.min(1, t / chaosSeconds)); started < due; started++) {
      try {
        // Every SUBFLOW_EVERY-th run is of the subflow shape.
        const runId = started % SUBFLOW_EVERY === SUBFLOW_EVERY - 1
          ? await startFlow(producer, SUBFLOW_FLOW, started)
          : await startFlow(producer, "chaos", input, {
            concurrencyKey: concurrencyKeyOf(started),
          });
        watch(producer, runId, watchers, (seconds - t) * 1000 + 5000);
      } catch {
        // A cut producer connection: the start rolled back; start it again on the next tick.
        break;
      }
    }
    if (t < chaosSeconds && t >= nextRespawn) {
      await aliasSwitch.respawnOld();
      nextRespawn = elapsed() + RESPAWN_EVERY_SECONDS;
    }
    if (t < chaosSeconds && t >= nextListenFault) {
      if (await listenFault(sql, listenRound, listenFaults)) listenRound++;
      nextListenFault = t + LISTEN_FAULT_EVERY_SECONDS;
    }
    if (t < chaosSeconds && t >= nextKill) {
      const victim = pick(fleet.running());
      if (victim !== undefined) {
        fleet.kill(victim);
        kills++;
      }
      nextKill = t + killDelayMs() / 1000;
    }
    if (t < chaosSeconds) await control.tick();
    else if (!controlDrained) {
      await control.drain();
      controlDrained = true;
    }
    await devRecompile.tick(producer, t);
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
    const slots = await mostSlotsInUse(sql);
    limit.most = Math.max(limit.most, slots);
    if (slots > CONCURRENCY_LIMIT) limit.overSamples++;
    limit.samples++;
    if (Date.now() - began >= nextSample) {
      nextSample += STUCK_SAMPLE_MS;
      for (const key of await stuckTasks(sql)) stuck.add(key);
    }
    terminal = started === runs && controlDrained && (await runCounts(sql)).started === 0 &&
      await control.pending(sql) === 0;
    await new Promise((resolve) => setTimeout(resolve, TICK_MS));
  }
  const wallMs = Date.now() - began;
  // A watch still pending this long after the deadline hangs (its own timeout has passed).
  await Promise.race([
    Promise.allSettled(watchers.done),
    new Promise((resolve) => setTimeout(resolve, 10_000)),
  ]);
  const watcherHangs = [...watchers.pending];
  const ended = await sql<{ run_id: string }[]>`
    select run_id::text from sluice.runs
    where run_id = any (${watchers.timedOut}::uuid[]) and status <> 'started'`;
  for (const { run_id } of ended) {
    watchers.errors.push(`${run_id}: RunTimeoutError although the run ended by the deadline`);
  }
  for (
    const line of [...watchers.errors, ...watcherHangs.map((id) => `${id}: hangs`)].slice(
      0,
      EXAMPLES,
    )
  ) {
    log(`watcher defect: ${line}`);
  }
  await aliasSwitch.end();
  await control.end();
  await devRecompile.end(producer);
  await producer.end({ timeout: 5 });
  await fleet.stop();
  const loadAfter = await loadAverage();
  for (const key of await stuckTasks(sql)) stuck.add(key);
  await fleet.record(sql);
  const found = await audit(sql);
  const heldOfEnded = await heldTasksOfEndedRuns(sql);
  const subflows = await subflowAudit(sql);
  const controlled = await control.audit(sql);
  for (
    const line of [
      ...controlled.cancelledWithLiveWork.map((id) => `cancelled run ${id} has live work`),
      ...controlled.claimsAfterCancel.map((key) => `${key} claimed after its run's cancel`),
      ...controlled.signalRunsNotCompleted.map((id) => `signal run ${id} did not complete`),
    ].slice(0, EXAMPLES)
  ) {
    log(`defect: ${line}`);
  }
  for (
    const line of [
      ...subflows.duplicateChildren.map((key) => `duplicate children of ${key}`),
      ...subflows.missingChildren.map((key) => `subflow step of ${key}`),
      ...subflows.waitingWithoutLiveChild.map((id) => `${id} kids waits with no live child`),
      ...subflows.liveChildOfEndedParent.map((key) => `live child ${key}`),
      ...subflows.outputsOutOfOrder.map((id) => `${id} kids output is not its children's`),
    ].slice(0, EXAMPLES)
  ) {
    log(`defect: ${line}`);
  }
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
    ["alias moved back by an old version's respawn", aliasSwitch.movedBack],
    ["outputs accepted from a fenced worker (development recompile)", devRecompile.fencedOutputs],
    ["restart pauses set by a fenced worker", devRecompile.restartPaused],
    [
      "cancelled runs with a queued or started task or a waiting step",
      controlled.cancelledWithLiveWork.length,
    ],
    ["tasks claimed after their run's cancel committed", controlled.claimsAfterCancel.length],
    ["signal runs never cancelled and not completed", controlled.signalRunsNotCompleted.length],
    [
      "subflow: duplicate children (more than one child run for a parent step and index)",
      subflows.duplicateChildren.length,
    ],
    [
      `subflow: parents with a child missing or misplaced (${SUBFLOW_FAN_OUT} per started step)`,
      subflows.missingChildren.length,
    ],
    ["subflow: steps waiting with no live child", subflows.waitingWithoutLiveChild.length],
    ["subflow: live children of an ended parent", subflows.liveChildOfEndedParent.length],
    [
      "subflow: outputs not the children's in index order",
      subflows.outputsOutOfOrder.length,
    ],
    [
      `concurrency limit: samples with a key over its ${CONCURRENCY_LIMIT} slots`,
      limit.overSamples,
    ],
    ["concurrency limit: tasks still held after their run ended", heldOfEnded],
    [
      "watcher errors (waitForRun rejected, not by a failed or cancelled run)",
      watchers.errors.length,
    ],
    ["watcher hangs (waitForRun unsettled 10 s past its timeout)", watcherHangs.length],
  ];
  const info = [
    [
      "time from the restart to the first completion",
      firstAfterRestart === undefined
        ? "no completion"
        : duration(firstAfterRestart.getTime() - restart!.at.getTime()),
    ],
    ["executions recorded", whole(found.executions)],
    [
      `concurrency limit: most slots of one key seen / limit (${CONCURRENCY_KEYS} keys, samples)`,
      `${limit.most} / ${CONCURRENCY_LIMIT} (${whole(limit.samples)})`,
    ],
    [
      "subflow shape: parent runs / child runs started",
      `${whole(subflows.parents)} / ${whole(subflows.children)}`,
    ],
    [
      "run control: cancels / retries / signal runs / signals sent",
      `${whole(controlled.cancels)} / ${whole(controlled.retries)} / ${
        whole(controlled.signalRuns)
      } / ${whole(controlled.signalsSent)}`,
    ],
    ["workers SIGKILLed / exited on their own", `${kills} / ${fleet.unexpectedExits}`],
    ["old-version respawns (on-startup activation)", whole(aliasSwitch.respawns)],
    [
      "development recompile under a frozen worker: old worker ended / new-shape runs completed",
      `${devRecompile.oldEnd} / ${devRecompile.runsCompleted} of ${DEV_RUNS}`,
    ],
    [
      "LISTEN connections cut / LISTEN backends frozen",
      `${listenFaults.cut} / ${listenFaults.frozen}`,
    ],
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
      `${WORKERS} worker processes × ${MAX_CONCURRENT}; ${FAN_OUT + 1} tasks per run of chaos ` +
      `(its map step limited to ${CONCURRENCY_LIMIT} per key, ${CONCURRENCY_KEYS} keys), ` +
      `every ${SUBFLOW_EVERY}th run a ${SUBFLOW_FLOW} (2 tasks and ${SUBFLOW_FAN_OUT} child runs ` +
      `of 1 task); ` +
      `${MAX_ATTEMPTS} attempts, stall window ${STALL_WINDOW_SECONDS} s; ` +
      `load average before ${loadBefore}, after ${loadAfter}.\n`,
  );
  const completed = `${whole(counts.completed)} / ${whole(counts.failed)} / ${
    whole(counts.cancelled)
  } / ${whole(counts.started)}`;
  console.log(markdownTable(["measure", "value"], [
    [
      "runs completed / failed / cancelled / not terminal at the deadline (children included)",
      completed,
    ],
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
