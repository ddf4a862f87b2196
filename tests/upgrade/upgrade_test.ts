import assert from "node:assert/strict";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "../worker/_helpers.ts";
import { scaled } from "../_support.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { RunCancelledError, RunFailedError } from "../../src/client/errors.ts";
import { retryRun } from "../../src/client/retry_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow, signalPayload } from "../../src/dsl/flow.ts";
import { sendSignal } from "../../src/client/send_signal.ts";
import { getAlias } from "../../src/deploy/aliases.ts";
import { deleteSchedule, getScheduleTicks, schedule } from "../../src/client/schedules.ts";
import { upgradeFlows } from "./_flows.ts";
import { git, NO_RELEASE, readReleases, ROOT } from "../release/_releases.ts";

// Upgrading a live database: a database built and loaded with work by an earlier version's own
// code (checked out into a temporary worktree), then migrated to the current migrations (by
// `sluice migrate`, and separately by `install` + `supabase migration up`) and finished by current
// workers. The "from" version is the latest release in releases.json, or the
// revision SLUICE_UPGRADE_FROM names (development).
//
// In-flight states at the moment of the upgrade, all made by the old code:
//   - queued: runs started by the old producer, never claimed;
//   - started: a task claimed by an old worker that was SIGKILLed mid-task;
//   - retrying: a task whose first attempt failed, its retry delay pending;
//   - failing: a task that fails every attempt, one attempt already spent (the run ends failed);
//   - a map fan-out half done (two elements completed, two started by the killed worker);
//   - a branch skipped by its condition, its join started by the killed worker;
//   - a failed run (stays failed through the upgrade; retried after it, it completes, its attempt
//     numbers continuing);
//   - a queued and a started run cancelled after the upgrade, before any current worker runs;
//   - an alias pointing at V2, a run queued through it (starts after the upgrade land on V2 too);
//   - a worker function restart-paused by a fatal stop (the pause survives; current ops clears it);
//   - a fence record by the old ops CLI, then fence disable (current fence restore reads it back).
// After the upgrade, a schedule created on the upgraded database fires through current workers,
// a flow compiled there sleeps and waits for a signal (durable waits), and a routed definition is
// refused (shared queues are not built).
// Then the old/new matrix: an old worker process and current workers serve the same queues (a
// plain flow's, and each step queue of a withStepQueues flow) while producers of both versions
// start runs.
//
// The from-version's migrations must be an unchanged prefix of the current ones (a release's files
// are frozen); otherwise the upgrade tests are skipped naming the changed files, and the matrix
// alone runs the from-version's workers against a database built with the current migrations.

const override = Deno.env.get("SLUICE_UPGRADE_FROM");
const releases = await readReleases();
const from = override ?? releases.at(-1)?.commit;

/**
 * Why the upgrade from `from` cannot run, if it cannot: the current migrations must extend the old
 * version's unchanged (a release's files are frozen; a pre-release commit's may have been edited in
 * place since, and `sluice migrate` then refuses the database with MigrationChangedError).
 */
async function notAPrefix(commit: string): Promise<string | undefined> {
  const listed = await git("ls-tree", "--name-only", commit, "supabase/migrations/");
  const changed = [];
  for (const path of listed.split("\n").filter((line) => line.endsWith(".sql"))) {
    const current = await Deno.readTextFile(new URL(path, ROOT)).catch(() => undefined);
    if (current !== await git("show", `${commit}:${path}`)) changed.push(path.split("/").pop());
  }
  if (changed.length === 0) return undefined;
  return `the migrations at ${commit} are not a prefix of the working tree's (changed or removed ` +
    `since: ${changed.join(", ")}); only a release's frozen files upgrade`;
}

const unfrozen = from === undefined ? undefined : await notAPrefix(from);
// A release whose migrations changed is a failure (of the frozen-migrations rule), not a skip.
const skip = from === undefined ? NO_RELEASE : override ? unfrozen : undefined;

/** The handler both versions run: -1 always fails, 7 fails its first attempt, else doubles. */
const HANDLER_SOURCE = `(input, ctx) => {
  if (input.n < 0) throw new Error("negative input");
  if (input.n === 7 && ctx.attempt === 1) throw new Error("flaky first attempt");
  return Promise.resolve(input.n * 2);
}`;

/** The flow both versions compile: same slug, same shape. */
const FLOW_SOURCE = `(handler) =>
  new Flow({ slug: "upgrade_plain", timeout: 5, maxAttempts: 3, baseDelay: 2 })
    .step({ slug: "double" }, handler)`;

const MAX_ATTEMPTS = 3;

function upgradeFlow() {
  return new Flow<{ n: number }>({
    slug: "upgrade_plain",
    timeout: 5,
    maxAttempts: 3,
    baseDelay: 2,
  })
    .step({ slug: "double" }, (input, ctx) => {
      if (input.n < 0) throw new Error("negative input");
      if (input.n === 7 && ctx.attempt === 1) throw new Error("flaky first attempt");
      return Promise.resolve(input.n * 2);
    });
}

// The old side imports the release's public entry point only (what a release promises); the
// upgrade harness's own flows come from the copied _flows.ts.
const PRELUDE = `import postgres from "postgres";
import { activateAlias, compileFlow, Flow, startFlow, startWorker } from "./mod.ts";
const upgradeFlow = ${FLOW_SOURCE};
const handler = ${HANDLER_SOURCE};
const url = Deno.env.get("DATABASE_URL");
const sql = postgres(url, { onnotice: () => {} });
`;

/**
 * Old worker: fails -1 and 7 once each, claims 10 and hangs; half does a map fan-out, skips a
 * branch and hangs on its join, fails a run for good, points an alias at V2 and queues a run
 * through it, and stops fatally on a foreign message (pausing its function's restarts). Prints
 * the run ids once every state is in place; the test then SIGKILLs it.
 */
const OLD_WORKER = `${PRELUDE}
import { upgradeFlows } from "./tests/upgrade/_flows.ts";
const flows = upgradeFlows((flow, _step, value) =>
  flow === "upgrade_branch" || (flow === "upgrade_map" && value >= 3));
const flow = upgradeFlow((input, ctx) => input.n === 10 ? new Promise(() => {}) : handler(input, ctx));
const options = { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 };
for (const f of Object.values(flows)) await compileFlow(sql, f);
await compileFlow(sql, flow);
await activateAlias(sql, "upgrade_alias", "upgrade_alias_v1", { expectedGeneration: 0, force: true });
await activateAlias(sql, "upgrade_alias", "upgrade_alias_v2", { expectedGeneration: 1, force: true });
const viaAlias = await startFlow(sql, "upgrade_alias", { n: 1 });
await sql\`select pgmq.send('upgrade_guarded', '{"foreign": true}'::jsonb)\`;
for (const f of [flow, flows.map, flows.branch, flows.failed, flows.guarded]) {
  await startWorker(f, options);
}
const failing = await startFlow(sql, "upgrade_plain", { n: -1 });
const flaky = await startFlow(sql, "upgrade_plain", { n: 7 });
const map = await startFlow(sql, flows.map, [1, 2, 3, 4]);
const branch = await startFlow(sql, flows.branch, { plan: "free", n: 5 });
const failed = await startFlow(sql, flows.failed, { n: 1 });
const until = async (check) => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20));
};
await until(async () => (await sql\`select count(*)::int as n from sluice.step_tasks
  where run_id in (\${failing}, \${flaky}) and attempts_count = 1 and status <> 'started'\`)[0].n === 2);
const killed = await startFlow(sql, "upgrade_plain", { n: 10 });
const states = async (runId) => (await sql\`select string_agg(step_slug || ':' || status, ' '
  order by step_slug) as s from sluice.step_states where run_id = \${runId}\`)[0].s;
await until(async () => (await sql\`select status from sluice.step_tasks where run_id = \${killed}\`)[0].status === "started");
await until(async () => (await sql\`select count(*) filter (where status = 'completed')::int as done,
  count(*) filter (where status = 'started')::int as started from sluice.step_tasks
  where run_id = \${map} and step_slug = 'square'\`).every((r) => r.done === 2 && r.started === 2));
await until(async () => await states(branch) === "base:completed premium:skipped total:started" &&
  (await sql\`select status from sluice.step_tasks where run_id = \${branch} and step_slug = 'total'\`)[0]?.status === "started");
await until(async () => (await sql\`select status from sluice.runs where run_id = \${failed}\`)[0].status === "failed");
await until(async () => (await sql\`select count(*)::int as n from sluice.worker_functions
  where restart_paused_at is not null\`)[0].n === 1);
console.log("IDS " + JSON.stringify({ failing, flaky, killed, map, branch, failed, viaAlias }));
`;

/**
 * Old worker process of the matrix: serves the plain flow, and each step of the step-queued flow
 * with a step worker, until killed; as a producer it starts four step-queued runs.
 */
const OLD_MATRIX_WORKER = `${PRELUDE}
import { upgradeFlows } from "./tests/upgrade/_flows.ts";
const { stepped } = upgradeFlows();
const options = { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 };
const workers = [await startWorker(upgradeFlow(handler), options)];
for (const stepSlug of ["add", "mul"]) workers.push(await startWorker(stepped, { ...options, stepSlug }));
const runs = [];
for (const n of [1, 2, 3, 4]) runs.push(await startFlow(sql, stepped, { n }));
console.log("READY " + JSON.stringify({ workers: workers.map((w) => w.workerId), runs }));
`;

/** Old producer: queues runs while no worker serves the flow. */
const OLD_PRODUCER = `${PRELUDE}
const ids = [];
for (const n of [1, 2, 3]) ids.push(await startFlow(sql, "upgrade_plain", { n }));
console.log(JSON.stringify(ids));
await sql.end();
`;

/** Runs the old worker until every in-flight state is in place, then SIGKILLs it. */
async function killOldWorkerMidTask(tree: string, env: Record<string, string>) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "_upgrade_worker.ts"],
    cwd: tree,
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines: string[] = [];
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  try {
    while (!lines.some((line) => line.startsWith("IDS "))) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the old worker exited early: ${lines.join(" | ")}`);
      buffered += value;
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
    }
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel().catch(() => {});
  }
  return JSON.parse(lines.find((l) => l.startsWith("IDS "))!.slice(4)) as Record<
    "failing" | "flaky" | "killed" | "map" | "branch" | "failed" | "viaAlias",
    string
  >;
}

/**
 * The old/new matrix on a database at the current migrations: an old worker process (the plain
 * flow's worker and a step worker per step of the step-queued flow) beside current workers on the
 * same queues, runs started by producers of both versions; every run completes with its output
 * and no task runs twice. Logs how many tasks of each step each version ran.
 */
async function oldNewMatrix(tree: string, db: TestDatabase, env: Record<string, string>) {
  const flow = upgradeFlow();
  const flows = upgradeFlows();
  await using _plain = await testWorker(flow, db);
  await using _add = await testWorker(flows.stepped, db, { stepSlug: "add" });
  await using _mul = await testWorker(flows.stepped, db, { stepSlug: "mul" });
  await Deno.writeTextFile(`${tree}/_matrix_worker.ts`, OLD_MATRIX_WORKER);
  const oldWorker = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "_matrix_worker.ts"],
    cwd: tree,
    env,
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = oldWorker.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let ready = "";
    while (!ready.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the old matrix worker exited: ${ready}`);
      ready += value;
    }
    assert.match(ready, /^READY /);
    const old = JSON.parse(ready.slice(6)) as { workers: string[]; runs: string[] };
    const oldRuns = JSON.parse(
      (await run(Deno.execPath(), tree, ["run", "-A", "_upgrade_producer.ts"], env)).trim(),
    ) as string[];
    const newRuns = [];
    for (const n of [1, 2, 3]) newRuns.push(await startFlow(db.sql, "upgrade_plain", { n }));
    const all = [...oldRuns, ...newRuns];
    const outputs = [];
    for (const id of all) {
      outputs.push(await waitForRun(db.sql, id, { timeoutMs: scaled(30_000), flow }));
    }
    assert.deepEqual(outputs, [1, 2, 3, 1, 2, 3].map((n) => ({ double: n * 2 })));
    const stepRuns = [...old.runs];
    for (const n of [1, 2, 3, 4]) {
      stepRuns.push(await startFlow(db.sql, flows.stepped, { n }));
    }
    const stepOutputs = [];
    for (const id of stepRuns) {
      stepOutputs.push(
        await waitForRun(db.sql, id, { timeoutMs: scaled(30_000), flow: flows.stepped }),
      );
    }
    assert.deepEqual(
      stepOutputs,
      [1, 2, 3, 4, 1, 2, 3, 4].map((n) => ({ mul: (n + 1) * 10 })),
    );
    const served = await db.sql`
        select t.flow_slug || '.' || t.step_slug as step,
          case when t.last_worker_id = any(${old.workers}) then 'old' else 'current' end as worker,
          count(*)::int as tasks
        from sluice.step_tasks t where t.run_id = any(${[...all, ...stepRuns]})
        group by 1, 2 order by 1, 2`;
    console.log(
      `matrix: tasks per worker ${
        served.map((r) => `${r.step} ${r.worker}=${r.tasks}`).join(", ")
      }`,
    );
    const [{ over }] = await db.sql`
        select count(*)::int as over from sluice.step_tasks
        where run_id = any(${[...all, ...stepRuns]}) and attempts_count > 1`;
    assert.equal(over, 0, "a matrix task ran more than once");
  } finally {
    oldWorker.kill("SIGKILL");
    await oldWorker.status;
    await reader.cancel().catch(() => {});
  }
}

const SUPABASE_CLI = Deno.env.get("SLUICE_SUPABASE_CLI") ??
  new URL(".tools/supabase/node_modules/.bin/supabase", ROOT).pathname;

async function run(
  program: string,
  cwd: string,
  args: string[],
  env: Record<string, string>,
): Promise<string> {
  const output = await new Deno.Command(program, {
    args,
    cwd,
    env,
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const text = new TextDecoder().decode(output.stdout);
  if (!output.success) {
    throw new Error(
      `Cannot run ${program} ${args.join(" ")} in ${cwd}: ${text}${
        new TextDecoder().decode(output.stderr)
      }`,
    );
  }
  return text;
}

const supabaseUp = (project: string, dir: string, env: Record<string, string>) =>
  run(SUPABASE_CLI, project, [
    "migration",
    "up",
    "--db-url",
    `${env.DATABASE_URL}?sslmode=disable`,
  ], { ...env, HOME: dir });

/**
 * The two ways a database is migrated, each used for the old build and for the upgrade:
 * `sluice migrate` of each version, or a user project where the old `install` copied the old
 * files, the current `install` copies only the new ones, and `supabase migration up` applies them.
 */
const RUNNERS = {
  "sluice migrate": {
    build: (tree: string, _dir: string, env: Record<string, string>) =>
      run(Deno.execPath(), tree, ["run", "-A", "cli.ts", "migrate"], env),
    upgrade: (_tree: string, _dir: string, env: Record<string, string>) =>
      run(Deno.execPath(), ROOT.pathname, ["run", "-A", "cli.ts", "migrate"], env),
  },
  "supabase migration up": {
    build: async (tree: string, dir: string, env: Record<string, string>) => {
      const project = `${dir}/project`;
      await Deno.mkdir(`${project}/supabase`, { recursive: true });
      await run(Deno.execPath(), project, ["run", "-A", `${tree}/cli.ts`, "install"], env);
      // Supabase's server ships the pgmq extension; plain PostgreSQL in compat mode does not, so
      // the old version's installer stands in for the platform before the migrations run.
      await run(Deno.execPath(), tree, [
        "eval",
        `import postgres from "postgres";
import { installPgmq } from "./src/ops/install_pgmq.ts";
const sql = postgres(Deno.env.get("DATABASE_URL"), { onnotice: () => {} });
await installPgmq(sql);
await sql.end();`,
      ], env);
      return await supabaseUp(project, dir, env);
    },
    upgrade: async (_tree: string, dir: string, env: Record<string, string>) => {
      const project = `${dir}/project`;
      const listing = () =>
        [...Deno.readDirSync(`${project}/supabase/migrations`)].map((e) => e.name);
      const before = new Set(listing());
      const installed = await run(Deno.execPath(), project, [
        "run",
        "-A",
        new URL("cli.ts", ROOT).pathname,
        "install",
      ], env);
      // install names each copy <its own timestamp>_<sluice's file name>.
      const original = (name: string) => name.replace(/^\d{14}_(?=\d{14}_)/, "");
      const had = new Set([...before].map(original));
      const added = listing().filter((name) => !before.has(name)).map(original).sort();
      const current = [...Deno.readDirSync(new URL("supabase/migrations/", ROOT))]
        .map((e) => e.name).filter((name) => !had.has(name)).sort();
      assert.deepEqual(added, current, `install copied other than the new files: ${installed}`);
      return `install added [${added.join(", ")}]\n${await supabaseUp(project, dir, env)}`;
    },
  },
};

for (const [runner, { build, upgrade }] of Object.entries(RUNNERS)) {
  Deno.test({
    name: skip !== undefined
      ? `a database with in-flight runs upgrades through ${runner} and finishes (skipped: ${skip})`
      : `a database with in-flight runs from ${
        override ? `SLUICE_UPGRADE_FROM=${override}` : from
      } ` +
        `upgrades through ${runner} and finishes with current workers`,
    ignore: skip !== undefined,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      assert.equal(unfrozen, undefined, `Cannot upgrade from release ${from}: ${unfrozen}`);
      const dir = await Deno.makeTempDir({ prefix: "sluice_upgrade_" });
      const tree = `${dir}/from`;
      await git("worktree", "add", "--detach", tree, from!);
      try {
        await using db = await freshDatabase({ empty: true });
        const env = { DATABASE_URL: db.url };
        await build(tree, dir, env);
        await Deno.mkdir(`${tree}/tests/upgrade`, { recursive: true });
        await Deno.copyFile(
          new URL("_flows.ts", import.meta.url),
          `${tree}/tests/upgrade/_flows.ts`,
        );
        await Deno.writeTextFile(`${tree}/_upgrade_worker.ts`, OLD_WORKER);
        await Deno.writeTextFile(`${tree}/_upgrade_producer.ts`, OLD_PRODUCER);
        const ids = await killOldWorkerMidTask(tree, env);
        const { failing, flaky, killed } = ids;
        const queued = JSON.parse(
          (await run(Deno.execPath(), tree, ["run", "-A", "_upgrade_producer.ts"], env)).trim(),
        ) as string[];
        // Fence state, recorded by the old ops CLI over the functions of two of the old worker's flows;
        // the paused one was disabled before the record.
        const manifest = `${dir}/functions.manifest.json`;
        const fenceState = `${dir}/sluice.fence.json`;
        await Deno.writeTextFile(
          manifest,
          JSON.stringify({
            functions: ["upgrade_failed", "upgrade_guarded"].map((slug) => ({
              function_name: slug.replace("_", "-"),
              flow_slug: slug,
              step_slug: null,
              queue_name: slug,
              queue_mode: "flow",
            })),
          }),
        );
        const oldOps = (...args: string[]) =>
          run(Deno.execPath(), tree, ["run", "-A", "cli.ts", "ops", ...args], env);
        await oldOps("functions", "disable", "upgrade-guarded");
        await oldOps("fence", "record", "--manifest", manifest, "--state", fenceState);
        await oldOps("fence", "disable", "--state", fenceState);

        // The states are really in flight at the upgrade.
        const before = await db.sql`
        select run_id, status, attempts_count from sluice.step_tasks order by run_id`;
        const state = (id: string) => {
          const row = before.find((r) => r.run_id === id)!;
          return `${row.status}/${row.attempts_count}`;
        };
        assert.equal(state(killed), "started/1");
        assert.equal(state(flaky), "queued/1");
        assert.equal(state(failing), "queued/1");
        for (const id of queued) assert.equal(state(id), "queued/0");
        const steps = async (id: string) =>
          (await db.sql<{ s: string }[]>`
          select string_agg(step_slug || ':' || status || coalesce(':' || skip_reason, ''), ' '
            order by step_slug) as s
          from sluice.step_states where run_id = ${id}`)[0].s;
        const tasks = async (id: string) =>
          (await db.sql<{ s: string }[]>`
          select string_agg(step_slug || '[' || task_index || ']:' || status || '/' ||
            attempts_count, ' ' order by step_slug, task_index) as s
          from sluice.step_tasks where run_id = ${id}`)[0].s;
        const runRow = async (id: string) =>
          (await db.sql`select flow_slug, status, error_message from sluice.runs
          where run_id = ${id}`)[0];
        assert.equal(
          await tasks(ids.map),
          "square[0]:completed/1 square[1]:completed/1 square[2]:started/1 square[3]:started/1",
        );
        assert.equal(
          await steps(ids.branch),
          "base:completed premium:skipped:condition_unmet total:started",
        );
        const failedBefore = await runRow(ids.failed);
        assert.equal(failedBefore.status, "failed");
        assert.match(failedBefore.error_message, /boom 1/);
        assert.equal((await runRow(ids.viaAlias)).flow_slug, "upgrade_alias_v2");
        const pausedQuery = async () => [
          ...await db.sql`select function_name, restart_paused_at, pause_reason
          from sluice.worker_functions where restart_paused_at is not null`,
        ];
        const pausedBefore = await pausedQuery();
        assert.equal(pausedBefore.length, 1);
        assert.match(pausedBefore[0].pause_reason, /unsupported work on queue "upgrade_guarded"/);
        const enabled = async () =>
          Object.fromEntries(
            (await db.sql`select function_name, enabled from sluice.worker_functions
            where function_name in ('upgrade-failed', 'upgrade-guarded')`).map((
              r,
            ) => [r.function_name, r.enabled]),
          );
        assert.deepEqual(await enabled(), { "upgrade-failed": false, "upgrade-guarded": false });

        const migrated = await upgrade(tree, dir, env);
        console.log(`${runner}: ${migrated.trim()}`);
        const files = [...Deno.readDirSync(new URL("supabase/migrations/", ROOT))].length;
        const [ledger] = await db.sql`
        select count(*)::int as n from supabase_migrations.schema_migrations`;
        assert.equal(ledger.n, files, "the upgrade did not record every current migration");
        // 20261202000400 (server cost) reached the database under the work in flight: its tables
        // keep room for updated rows and lock_run_steps plans once per session;
        // 20261207000400 pinned its search_path next to that.
        assert.deepEqual(
          (await db.sql`select relname, reloptions from pg_class
            where relnamespace = 'sluice'::regnamespace
              and relname in ('runs', 'step_states', 'step_tasks') order by relname`)
            .map((r) => `${r.relname} ${r.reloptions}`),
          ["runs fillfactor=60", "step_states fillfactor=60", "step_tasks fillfactor=60"],
        );
        const [lockRunSteps] = await db.sql`select proconfig from pg_proc
          where oid = 'sluice.lock_run_steps(uuid[], text[], boolean)'::regprocedure`;
        assert.deepEqual(lockRunSteps.proconfig, [
          "plan_cache_mode=force_generic_plan",
          "search_path=pg_catalog, pg_temp",
        ]);
        // Every function the old release defined is pinned too, and the compat layer's with them.
        const unpinned = await db.sql`select p.oid::regprocedure::text as signature from pg_proc p
          where p.prokind = 'f'
            and (p.pronamespace = 'sluice'::regnamespace or (p.pronamespace = 'pgmq'::regnamespace
              and not exists (select from pg_extension where extname = 'pgmq')))
            and not coalesce('search_path=pg_catalog, pg_temp' = any (p.proconfig), false)`;
        assert.deepEqual(unpinned.map((r) => r.signature), []);

        // Operator state survives: the restart pause as it was (the current ops CLI lifts it), and
        // the current `fence restore` puts back the enabled values the old `fence record` found.
        assert.deepEqual(await pausedQuery(), pausedBefore);
        const currentOps = (...args: string[]) =>
          run(Deno.execPath(), ROOT.pathname, ["run", "-A", "cli.ts", "ops", ...args], env);
        await currentOps("clear-pause", pausedBefore[0].function_name);
        assert.deepEqual(await pausedQuery(), []);
        await currentOps("fence", "restore", "--state", fenceState);
        assert.deepEqual(await enabled(), { "upgrade-failed": true, "upgrade-guarded": false });
        // The alias still points at V2, and a start through it after the upgrade lands there too.
        assert.equal((await getAlias(db.sql, "upgrade_alias"))?.flowSlug, "upgrade_alias_v2");
        const viaAliasAfter = await startFlow(db.sql, "upgrade_alias", { n: 2 });
        assert.equal((await runRow(viaAliasAfter)).flow_slug, "upgrade_alias_v2");

        // Run control on work the old version left in flight: a queued and a started run are
        // cancelled (their messages archived, the started attempt fenced) before any current
        // worker runs.
        const cancelledRuns = [queued[2], killed];
        for (const id of cancelledRuns) {
          const result = await cancelRun(db.sql, id, { reason: "cancelled after the upgrade" });
          assert.deepEqual([result.outcome, result.status, result.tasks], [
            "cancelled",
            "cancelled",
            1,
          ]);
        }
        assert.deepEqual(
          (await db.sql`select status from sluice.step_tasks
            where run_id = any(${cancelledRuns}) order by status`).map((r) => r.status),
          ["cancelled", "cancelled"],
        );
        const [{ live }] = await db.sql`
          select count(*)::int as live from pgmq.q_upgrade_plain q
          join sluice.step_tasks t on t.message_id = q.msg_id
          where t.run_id = any(${cancelledRuns})`;
        assert.equal(live, 0);

        // The killed tasks count as stalled after timeout (5 s) + 30 s: pretend that time passed.
        await db.sql`update sluice.step_tasks set started_at = now() - interval '1 minute'
        where status = 'started'`;
        const flow = upgradeFlow();
        const flows = upgradeFlows();
        await using _worker = await testWorker(flow, db);
        await using _map = await testWorker(flows.map, db);
        await using _branch = await testWorker(flows.branch, db);
        await using _failed = await testWorker(flows.failed, db);
        await using _alias = await testWorker(flows.aliasV2, db);
        for (
          const [id, n] of [[queued[0], 1], [queued[1], 2], [flaky, 7]] as const
        ) {
          assert.deepEqual(await waitForRun(db.sql, id, { timeoutMs: scaled(30_000), flow }), {
            double: n * 2,
          });
        }
        await assert.rejects(
          waitForRun(db.sql, failing, { timeoutMs: scaled(30_000), flow }),
          RunFailedError,
        );
        for (const id of cancelledRuns) {
          await assert.rejects(
            waitForRun(db.sql, id, { timeoutMs: scaled(30_000), flow }),
            RunCancelledError,
          );
        }
        const wait = (id: string) => waitForRun(db.sql, id, { timeoutMs: scaled(30_000) });
        assert.deepEqual(await wait(ids.map), { sum: 30 });
        assert.deepEqual(await wait(ids.branch), { total: 5 });
        assert.deepEqual(await wait(ids.viaAlias), { tag: "v2:1" });
        assert.deepEqual(await wait(viaAliasAfter), { tag: "v2:2" });
        const after = await db.sql`select run_id, attempts_count from sluice.step_tasks`;
        const attempts = (id: string) => after.find((r) => r.run_id === id)!.attempts_count;
        assert.deepEqual(
          [...queued.map(attempts), attempts(killed), attempts(flaky), attempts(failing)],
          [1, 1, 0, 1, 2, MAX_ATTEMPTS],
        );
        assert.equal(
          await tasks(ids.map),
          "square[0]:completed/1 square[1]:completed/1 square[2]:completed/2 " +
            "square[3]:completed/2 sum[0]:completed/1",
        );
        assert.equal(
          await steps(ids.branch),
          "base:completed premium:skipped:condition_unmet total:completed",
        );
        // The failed run stays failed, untouched by the current worker of its flow, until it is
        // retried: then it completes with its second attempt (attempt numbers continue).
        assert.deepEqual(await runRow(ids.failed), failedBefore);
        assert.equal(await tasks(ids.failed), "boom[0]:failed/1");
        const retried = await retryRun(db.sql, ids.failed);
        assert.deepEqual([retried.outcome, retried.status, retried.retryCount], [
          "retried",
          "started",
          1,
        ]);
        assert.deepEqual(await wait(ids.failed), { boom: 1 });
        assert.equal(await tasks(ids.failed), "boom[0]:completed/2");
        const [{ n }] = await db.sql`select count(*)::int as n from sluice.runs`;
        assert.equal(n, 11, "a run was lost or duplicated");

        // A schedule created after the upgrade fires on the upgraded database, through the
        // current workers' heartbeats (every second; deleted after its first tick).
        await schedule(db.sql, flow, {
          name: "upgrade_tick",
          cron: "* * * * * *",
          input: { n: 4 },
        });
        const [tick] = await waitUntil(async () => {
          const fired = await getScheduleTicks(db.sql, "upgrade_tick");
          return fired.length > 0 ? fired : null;
        }, "the upgraded database's first schedule tick");
        assert.equal(await deleteSchedule(db.sql, "upgrade_tick"), true);
        assert.equal(tick.error, null);
        assert.deepEqual(
          await waitForRun(db.sql, tick.runId!, { timeoutMs: scaled(30_000), flow }),
          {
            double: 8,
          },
        );

        // Idempotent starts on the upgraded database (20261207001300): the repeated start returns
        // the first one's run, which the current workers finish.
        const keyed = await startFlow(db.sql, flow, { n: 6 }, { idempotencyKey: "upgrade-6" });
        assert.equal(
          await startFlow(db.sql, flow, { n: 6 }, { idempotencyKey: "upgrade-6" }),
          keyed,
        );
        assert.deepEqual(await waitForRun(db.sql, keyed, { timeoutMs: scaled(30_000), flow }), {
          double: 12,
        });

        // Concurrency and rate limits on the upgraded database (20261207231000 to 20261207234003):
        // the runs started before the upgrade have no limit and finished above; a limited flow
        // compiled after it holds the tasks over its limit, and its worker runs them all.
        const limited = new Flow<{ n: number }>({ slug: "upgrade_limited" })
          .step({ slug: "one", concurrency: { limit: 1 } }, (input) => input.n)
          .step({ slug: "rated", dependsOn: ["one"], rateLimit: { limit: 2, period: 1 } }, (
            deps,
          ) => deps.one);
        await compileFlow(db.sql, limited);
        const limitedRuns = [];
        for (const n of [1, 2, 3]) limitedRuns.push(await startFlow(db.sql, limited, { n }));
        const [heldRow] = await db.sql`
          select slots_in_use, held from sluice.concurrency_slots where flow_slug = 'upgrade_limited'`;
        assert.deepEqual({ ...heldRow }, { slots_in_use: 1, held: 2 });
        {
          await using _limitedWorker = await testWorker(limited, db);
          for (const [i, id] of limitedRuns.entries()) {
            assert.deepEqual(
              await waitForRun(db.sql, id, { timeoutMs: scaled(30_000), flow: limited }),
              { rated: i + 1 },
            );
          }
        }
        const [{ leftover }] = await db.sql`
          select count(*)::int as leftover from sluice.concurrency_slots
          where flow_slug = 'upgrade_limited'`;
        assert.equal(leftover, 0);

        // Durable waits on the upgraded database: a flow compiled after the upgrade sleeps, waits
        // in the database for a signal (no task, no message), and finishes once it is sent.
        const waits = new Flow<{ n: number }>({ slug: "upgrade_waits" })
          .step({ slug: "ask" }, (input) => input.n)
          .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 0 }))
          .waitForSignal({
            slug: "approve",
            dependsOn: ["ask"],
            key: (deps) => `upgrade:${deps.ask}`,
            payload: signalPayload<{ ok: boolean }>(),
          })
          .step({ slug: "done", dependsOn: ["pause", "approve"] }, (deps) => ({
            woke: typeof deps.pause === "string",
            ok: deps.approve.ok,
          }));
        {
          await using _waitWorker = await testWorker(waits, db);
          const waitRun = await startFlow(db.sql, waits, { n: 5 });
          await waitUntil(async () => {
            const [row] = await db.sql`select status, wait_key,
              (select count(*)::int from sluice.step_tasks t
                where t.run_id = ss.run_id and t.step_slug = ss.step_slug) as tasks
              from sluice.step_states ss
              where run_id = ${waitRun} and step_slug = 'approve'`;
            return row?.status === "waiting" ? row : null;
          }, "the upgraded database's wait").then((row) =>
            assert.deepEqual([row.wait_key, row.tasks], ["upgrade:5", 0])
          );
          assert.equal(
            (await sendSignal(db.sql, { key: "upgrade:5", payload: { ok: true }, signalId: "u5" }))
              .released,
            1,
          );
          assert.deepEqual(
            await waitForRun(db.sql, waitRun, { timeoutMs: scaled(30_000), flow: waits }),
            {
              done: { woke: true, ok: true },
            },
          );
        }
        // The routed path is closed on the upgraded database (20261202000500): a routed
        // definition is refused naming the flow, before anything is written.
        const routedDefinition = {
          flow_slug: "upgrade_routed",
          queue_mode: "routed",
          options: {},
          steps: [{
            step_slug: "work",
            step_index: 0,
            step_type: "single",
            deps: [],
            map_source: null,
            required_input_pattern: null,
            forbidden_input_pattern: null,
            when_unmet: "skip",
            when_exhausted: "fail",
            options: {},
          }],
          routes: [{ step_slug: "work", queue_name: "upgrade_shared" }],
        };
        await assert.rejects(
          db.sql`select sluice.ensure_flow_compiled(
            ${db.sql.json(routedDefinition)}::jsonb, 'production')`,
          (error: Error & { code?: string }) =>
            error.code === "0A000" &&
            error.message.startsWith('Cannot compile flow "upgrade_routed": queue_mode "routed"'),
        );
        const [routedRows] = await db.sql`select
          (select count(*)::int from sluice.flows where flow_slug = 'upgrade_routed') as flows,
          (select count(*)::int from sluice.queues where queue_name = 'upgrade_shared') as queues`;
        assert.deepEqual({ ...routedRows }, { flows: 0, queues: 0 });
        await oldNewMatrix(tree, db, env);
      } finally {
        await git("worktree", "remove", "--force", tree);
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}

// A from-commit whose migrations cannot upgrade (not a prefix) still has workers a team may have
// deployed: the matrix runs them against a database built with the current migrations.
Deno.test({
  name: from === undefined
    ? `old/new worker matrix on a database at the current migrations (skipped: ${NO_RELEASE})`
    : skip === undefined
    ? "old/new worker matrix on a database at the current migrations (skipped: runs after the " +
      "upgrade instead)"
    : `old/new worker matrix: workers of SLUICE_UPGRADE_FROM=${override} beside current ` +
      "workers on a database at the current migrations",
  ignore: from === undefined || skip === undefined,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "sluice_matrix_" });
    const tree = `${dir}/from`;
    await git("worktree", "add", "--detach", tree, from!);
    try {
      await using db = await freshDatabase();
      await Deno.mkdir(`${tree}/tests/upgrade`, { recursive: true });
      await Deno.copyFile(new URL("_flows.ts", import.meta.url), `${tree}/tests/upgrade/_flows.ts`);
      await Deno.writeTextFile(`${tree}/_upgrade_producer.ts`, OLD_PRODUCER);
      await oldNewMatrix(tree, db, { DATABASE_URL: db.url });
    } finally {
      await git("worktree", "remove", "--force", tree);
      await Deno.remove(dir, { recursive: true });
    }
  },
});
