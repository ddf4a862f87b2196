import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { testWorker } from "../worker/_helpers.ts";
import { RunFailedError } from "../../src/client/errors.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
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
//   - failing: a task that fails every attempt, one attempt already spent (the run ends failed).
// Then the old/new matrix, plain flow: an old worker process and a current worker serve the same
// queue while producers of both versions start runs.

const override = Deno.env.get("SLUICE_UPGRADE_FROM");
const releases = await readReleases();
const from = override ?? releases.at(-1)?.commit;

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

const PRELUDE = `import postgres from "postgres";
import { Flow } from "./src/dsl/flow.ts";
import { compileFlow } from "./src/client/compile_flow.ts";
import { startFlow } from "./src/client/start_flow.ts";
import { startWorker } from "./src/worker/mod.ts";
const upgradeFlow = ${FLOW_SOURCE};
const handler = ${HANDLER_SOURCE};
const url = Deno.env.get("DATABASE_URL");
const sql = postgres(url, { onnotice: () => {} });
`;

/** Old worker: fails -1 and 7 once each, then claims 10 and hangs until SIGKILLed. */
const OLD_WORKER = `${PRELUDE}
const flow = upgradeFlow((input, ctx) => {
  if (input.n === 10) {
    console.log("STARTED " + ctx.runId);
    return new Promise(() => {});
  }
  return handler(input, ctx);
});
await compileFlow(sql, flow);
await startWorker(flow, { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 });
const failing = await startFlow(sql, "upgrade_plain", { n: -1 });
const flaky = await startFlow(sql, "upgrade_plain", { n: 7 });
console.log("IDS " + JSON.stringify({ failing, flaky }));
for (;;) {
  const [row] = await sql\`select count(*)::int as n from sluice.step_tasks
    where run_id in (\${failing}, \${flaky}) and attempts_count = 1 and status <> 'started'\`;
  if (row.n === 2) break;
  await new Promise((resolve) => setTimeout(resolve, 20));
}
console.log("STARTED_KILLED " + await startFlow(sql, "upgrade_plain", { n: 10 }));
`;

/** Old worker of the matrix: serves the flow with the shared handler until killed. */
const OLD_MATRIX_WORKER = `${PRELUDE}
const flow = upgradeFlow(handler);
const worker = await startWorker(flow, { connectionString: url, logLevel: "error", heartbeatIntervalMs: 100 });
console.log("READY " + worker.workerId);
`;

/** Old producer: queues runs while no worker serves the flow. */
const OLD_PRODUCER = `${PRELUDE}
const ids = [];
for (const n of [1, 2, 3]) ids.push(await startFlow(sql, "upgrade_plain", { n }));
console.log(JSON.stringify(ids));
await sql.end();
`;

/** Runs the old worker until its hanging task is claimed, then SIGKILLs it. */
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
    while (!lines.some((line) => line.startsWith("STARTED "))) {
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
  const ids = JSON.parse(lines.find((l) => l.startsWith("IDS "))!.slice(4)) as {
    failing: string;
    flaky: string;
  };
  const killed = lines.find((l) => l.startsWith("STARTED "))!.slice(8);
  return { ...ids, killed };
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
    name: from === undefined
      ? `a database with in-flight runs upgrades through ${runner} and finishes (skipped: ${NO_RELEASE})`
      : `a database with in-flight runs from ${
        override ? `SLUICE_UPGRADE_FROM=${override}` : from
      } ` +
        `upgrades through ${runner} and finishes with current workers`,
    ignore: from === undefined,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const dir = await Deno.makeTempDir({ prefix: "sluice_upgrade_" });
      const tree = `${dir}/from`;
      await git("worktree", "add", "--detach", tree, from!);
      try {
        await using db = await freshDatabase({ empty: true });
        const env = { DATABASE_URL: db.url };
        await build(tree, dir, env);
        await Deno.writeTextFile(`${tree}/_upgrade_worker.ts`, OLD_WORKER);
        await Deno.writeTextFile(`${tree}/_upgrade_producer.ts`, OLD_PRODUCER);
        const { failing, flaky, killed } = await killOldWorkerMidTask(tree, env);
        const queued = JSON.parse(
          (await run(Deno.execPath(), tree, ["run", "-A", "_upgrade_producer.ts"], env)).trim(),
        ) as string[];

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

        const migrated = await upgrade(tree, dir, env);
        console.log(`${runner}: ${migrated.trim()}`);
        const files = [...Deno.readDirSync(new URL("supabase/migrations/", ROOT))].length;
        const [ledger] = await db.sql`
        select count(*)::int as n from supabase_migrations.schema_migrations`;
        assert.equal(ledger.n, files, "the upgrade did not record every current migration");
        // The killed task counts as stalled after timeout (5 s) + 30 s: pretend that time passed.
        await db.sql`update sluice.step_tasks set started_at = now() - interval '1 minute'
        where status = 'started'`;
        const flow = upgradeFlow();
        await using _worker = await testWorker(flow, db);
        for (
          const [id, n] of [[queued[0], 1], [queued[1], 2], [queued[2], 3], [killed, 10], [
            flaky,
            7,
          ]] as const
        ) {
          assert.deepEqual(await waitForRun(db.sql, id, { timeoutMs: 30_000, flow }), {
            double: n * 2,
          });
        }
        await assert.rejects(
          waitForRun(db.sql, failing, { timeoutMs: 30_000, flow }),
          RunFailedError,
        );
        const after = await db.sql`select run_id, attempts_count from sluice.step_tasks`;
        const attempts = (id: string) => after.find((r) => r.run_id === id)!.attempts_count;
        assert.deepEqual(
          [...queued.map(attempts), attempts(killed), attempts(flaky), attempts(failing)],
          [1, 1, 1, 2, 2, MAX_ATTEMPTS],
        );
        const [{ n }] = await db.sql`select count(*)::int as n from sluice.runs`;
        assert.equal(n, 6, "a run was lost or duplicated");
        // The old/new matrix (plain flow): an old worker process beside the current one on the same
        // queue, runs started by producers of both versions.
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
          const oldRuns = JSON.parse(
            (await run(Deno.execPath(), tree, ["run", "-A", "_upgrade_producer.ts"], env)).trim(),
          ) as string[];
          const newRuns = [];
          for (const n of [1, 2, 3]) newRuns.push(await startFlow(db.sql, "upgrade_plain", { n }));
          const all = [...oldRuns, ...newRuns];
          const outputs = [];
          for (const id of all) {
            outputs.push(await waitForRun(db.sql, id, { timeoutMs: 30_000, flow }));
          }
          assert.deepEqual(outputs, [1, 2, 3, 1, 2, 3].map((n) => ({ double: n * 2 })));
          const served = await db.sql`
            select t.last_worker_id = ${_worker.workerId} as current, count(*)::int as tasks
            from sluice.step_tasks t where t.run_id = any(${all}) group by 1 order by 1`;
          console.log(`matrix: tasks per worker ${JSON.stringify(served)}`);
          const [{ over }] = await db.sql`
            select count(*)::int as over from sluice.step_tasks
            where run_id = any(${all}) and attempts_count > 1`;
          assert.equal(over, 0, "a matrix task ran more than once");
        } finally {
          oldWorker.kill("SIGKILL");
          await oldWorker.status;
          await reader.cancel().catch(() => {});
        }
      } finally {
        await git("worktree", "remove", "--force", tree);
        await Deno.remove(dir, { recursive: true });
      }
    },
  });
}
