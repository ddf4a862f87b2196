// The rollout and visibility commands of `deno task ops` against real workers: the fence round
// trip, runs and run with a retried map task, one-off switches, and a database without sluice.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { main } from "../../src/cli/main.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { ops, opsDone, Output } from "./_ops.ts";
import { latch, testWorker, waitUntil } from "../worker/_helpers.ts";
import {
  compileFlow,
  completeTask,
  readAndClaim,
  registerWorker,
  startFlow as startSqlFlow,
} from "../sql/_fixtures.ts";
import {
  call,
  countingServer,
  LogCapture,
  serve,
  standInEdgeRuntime,
  testHandler,
  workerCounts,
} from "../edge/_helpers.ts";

function manifestEntry(flow: string, functionName: string) {
  return {
    function_name: functionName,
    flow_slug: flow,
    step_slug: null,
    queue_name: flow,
    queue_mode: "flow",
  };
}

async function writeManifest(entries: unknown[]): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".manifest.json" });
  await Deno.writeTextFile(path, JSON.stringify({ functions: entries }));
  return path;
}

async function enabledOf(db: TestDatabase): Promise<Record<string, boolean>> {
  const rows = await db.sql<{ function_name: string; enabled: boolean }[]>`
    select function_name, enabled from sluice.worker_functions
  `;
  return Object.fromEntries(rows.map((row) => [row.function_name, row.enabled]));
}

Deno.test("fence round trip: drain waits for the in-flight task, restore keeps a disabled function disabled", async () => {
  await using db = await freshDatabase();
  const entered = latch();
  const release = latch();
  const slow = new Flow<{ n: number }>({ slug: "slow_flow" })
    .step({ slug: "work" }, async (input) => {
      entered.resolve();
      await release.promise;
      return input.n;
    });
  const idle = new Flow<{ n: number }>({ slug: "idle_flow" }).step({ slug: "noop" }, () => 0);
  const manifest = await writeManifest([
    manifestEntry("slow_flow", "slow-flow"),
    manifestEntry("idle_flow", "idle-flow"),
  ]);
  const state = `${await Deno.makeTempDir()}/fence.json`;
  const fence = (...args: string[]) => [...args, "--state", state];

  const slowWorker = await testWorker(slow, db);
  const idleWorker = await testWorker(idle, db);
  assert.equal(slowWorker.functionName, "slow-flow");
  assert.equal((await opsDone(db, "functions", "disable", "idle-flow")).code, 0);
  const [{ run_id: runId }] = await db
    .sql`select sluice.start_flow('slow_flow', '{"n": 7}') as run_id`;
  await entered.promise;

  const record = await opsDone(db, ...fence("fence", "record", "--manifest", manifest, "--json"));
  assert.equal(record.code, 0, record.err);
  assert.deepEqual(
    (JSON.parse(record.out) as { function_name: string; enabled: boolean }[])
      .map((row) => [row.function_name, row.enabled]),
    [["idle-flow", false], ["slow-flow", true]],
  );
  const again = await opsDone(db, ...fence("fence", "record", "--manifest", manifest));
  assert.equal(again.code, 1, "a second record must not overwrite the first");
  assert.match(again.err, /already holds a record/);

  assert.equal((await opsDone(db, ...fence("fence", "disable"))).code, 0);
  assert.deepEqual(await enabledOf(db), { "idle-flow": false, "slow-flow": false });

  // The task is still running: a short drain gives up and says what is left.
  const short = await opsDone(db, ...fence("fence", "drain", "--timeout", "1s"));
  assert.equal(short.code, 1);
  assert.match(short.err, /Cannot finish the drain within 1s; still running:/);
  assert.match(short.err, new RegExp(`task work\\[0\\] of run ${runId} started .* of slow-flow`));
  assert.match(short.out, /^\[\d+s\] draining: \d live workers, 1 started tasks/m);

  let settled = false;
  const drain = ops(db, fence("fence", "drain", "--timeout", "60s"));
  void drain.code.then(() => settled = true);
  await waitUntil(
    () => /draining: 1 live workers, 1 started tasks/.test(drain.output.text),
    "the drain to report the held task",
  );
  await waitUntil(() => slowWorker.status === "stopping" || null, "the slow worker to drain");
  assert.equal(settled, false, "the drain must wait for the in-flight task");
  release.resolve();
  assert.equal(await drain.code, 0, drain.output.errors);
  assert.match(
    drain.output.text,
    /^Drained: no live worker and no started task in 2 worker functions\.$/m,
  );
  const [task] = await db.sql`select status from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "completed", "the drain ended only after the task's completion");
  await slowWorker.done;
  await idleWorker.done;

  // Restore waits for a fresh worker of the re-enabled function only.
  const restore = ops(db, fence("fence", "restore", "--timeout", "60s"));
  await waitUntil(
    () => /waiting for a fresh worker of slow-flow$/m.test(restore.output.text),
    "restore to wait for slow-flow",
  );
  assert.deepEqual(await enabledOf(db), { "idle-flow": false, "slow-flow": true });
  await using fresh = await testWorker(slow, db);
  assert.equal(await restore.code, 0, restore.output.errors);
  assert.deepEqual(await enabledOf(db), { "idle-flow": false, "slow-flow": true });
  await assert.rejects(Deno.stat(state), Deno.errors.NotFound);

  // Coverage of the new manifest: idle-flow has no worker.
  const missing = await opsDone(db, "fence", "confirm", "--manifest", manifest);
  assert.equal(missing.code, 1);
  assert.match(missing.out, /^idle-flow +idle_flow +noop +idle_flow +0 +MISSING$/m);
  assert.match(missing.out, /^slow-flow +slow_flow +work +slow_flow +1 +ok$/m);
  assert.match(missing.err, /1 of 2 routes of the manifest have no live worker: idle_flow\.noop/);
  await using idleAgain = await testWorker(idle, db);
  const covered = await opsDone(db, "fence", "confirm", "--manifest", manifest, "--json");
  assert.equal(covered.code, 0, covered.err);
  assert.deepEqual(
    (JSON.parse(covered.out) as { function_name: string; live_workers: number }[])
      .map((row) => [row.function_name, row.live_workers]),
    [["idle-flow", 1], ["slow-flow", 1]],
  );
  assert.ok(fresh.workerId !== idleAgain.workerId);
});

Deno.test("fence record takes every added, removed and changed function into the set", async () => {
  await using db = await freshDatabase();
  const old = await writeManifest([
    manifestEntry("a", "fn-a"),
    manifestEntry("b", "fn-b"),
    manifestEntry("c", "fn-c"),
  ]);
  const next = await writeManifest([
    manifestEntry("a", "fn-a"),
    { ...manifestEntry("b", "fn-b"), queue_name: "b_v2" },
    manifestEntry("d", "fn-d"),
  ]);
  const diff = await opsDone(db, "fence", "diff", "--old-manifest", old, "--manifest", next);
  assert.equal(diff.code, 0, diff.err);
  assert.equal(
    diff.out,
    [
      "FUNCTION  CHANGE     OLD ROUTE  NEW ROUTE",
      "fn-a      unchanged  a.* -> a   a.* -> a",
      "fn-b      changed    b.* -> b   b.* -> b_v2",
      "fn-c      removed    c.* -> c   -",
      "fn-d      added      -          d.* -> d",
    ].join("\n"),
  );
  const state = `${await Deno.makeTempDir()}/fence.json`;
  const record = await opsDone(
    db,
    ...["fence", "record", "--manifest", next, "--old-manifest", old, "--functions", "fn-a"],
    ...["--state", state],
  );
  assert.equal(record.code, 0, record.err);
  const written = JSON.parse(await Deno.readTextFile(state));
  assert.deepEqual(
    written.functions.map((entry: Record<string, unknown>) => [
      entry.function_name,
      entry.change,
      entry.deployed,
      entry.tracked,
    ]),
    [
      ["fn-a", "unchanged", true, false],
      ["fn-b", "changed", true, false],
      ["fn-c", "removed", false, false],
      ["fn-d", "added", true, false],
    ],
  );
  const unknown = await opsDone(
    db,
    ...["fence", "record", "--manifest", next, "--functions", "fn-x", "--state", `${state}.2`],
  );
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /Cannot record the fence: "fn-x" in neither manifest/);
  await assert.rejects(Deno.stat(`${state}.2`), Deno.errors.NotFound);
});

Deno.test("runs and run show a retried map task's error; --json parses back; --watch ends with the run", async () => {
  await using db = await freshDatabase();
  const squares = new Flow<number[]>({ slug: "squares", maxAttempts: 2, baseDelay: 1 })
    .map({ slug: "square" }, (value, context) => {
      if (value === 3 && context.attempt === 1) throw new Error(`flaky element ${value}`);
      if (value === 4) throw new Error(`element ${value} always fails`);
      return value * value;
    })
    .step({ slug: "total", dependsOn: ["square"] }, (deps) => deps.square.length);
  await using worker = await testWorker(squares, db);
  const [{ run_id: okRun }] = await db
    .sql`select sluice.start_flow('squares', '[1, 2, 3]') as run_id`;
  const watch = await opsDone(db, "run", okRun, "--watch");
  assert.equal(watch.code, 0, watch.err);
  assert.match(watch.out, new RegExp(`^Run ${okRun} of flow squares: completed$`, "m"));
  const [{ run_id: badRun }] = await db.sql`select sluice.start_flow('squares', '[4]') as run_id`;
  const failedWatch = await opsDone(db, "run", badRun, "--watch");
  assert.equal(failedWatch.code, 1, "watching a run that fails exits 1");

  const shown = await opsDone(db, "run", okRun);
  assert.equal(shown.code, 0, shown.err);
  assert.match(shown.out, /^square +completed +3\/3 +4 /m);
  assert.match(shown.out, /^└ total +completed +1\/1 +1 .* square$/m);
  assert.match(shown.out, /^ {2}square\[2\] completed after 2 attempts: Error: flaky element 3$/m);

  const json = await opsDone(db, "run", okRun, "--json");
  const detail = JSON.parse(json.out);
  assert.equal(detail.status, "completed");
  const square = detail.steps.find((step: { stepSlug: string }) => step.stepSlug === "square");
  assert.deepEqual(
    square.tasks.map((task: { taskIndex: number; attempts: number; lastError: string | null }) => [
      task.taskIndex,
      task.attempts,
      task.lastError?.split("\n")[0] ?? null,
    ]),
    [[0, 1, null], [1, 1, null], [2, 2, "Error: flaky element 3"]],
  );
  assert.deepEqual(detail.steps[1].dependsOn, ["square"]);

  const failed = await opsDone(db, "runs", "--status", "failed", "--flow", "squares", "--json");
  const rows = JSON.parse(failed.out) as { run_id: string; error_message: string }[];
  assert.deepEqual(rows.map((row) => row.run_id), [badRun]);
  assert.match(rows[0].error_message, /element 4 always fails/);
  const table = await opsDone(db, "runs", "--since", "1 hour");
  assert.match(table.out, new RegExp(`^${okRun} +squares +completed +2/2 `, "m"));
  assert.match(table.out, new RegExp(`^${badRun} +squares +failed .*element 4 always fails$`, "m"));
  assert.equal((await opsDone(db, "runs", "--since", "2000-01-01")).out.split("\n").length, 3);
  const badStatus = await opsDone(db, "runs", "--status", "done");
  assert.equal(badStatus.code, 2);
  assert.match(
    badStatus.err,
    /--status must be one of started, completed, failed, cancelled, got "done"/,
  );
  const none = await opsDone(db, "run", crypto.randomUUID());
  assert.equal(none.code, 1);
  assert.match(none.err, /no run has that id/);
  assert.ok(worker.workerId);
});

Deno.test("functions enable, disable, deprecate and prune; queues archive refuses a live task's message", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ n: number }>({ slug: "switches" }).step({ slug: "s" }, () => 1);
  const worker = await testWorker(flow, db);
  const typo = await opsDone(db, "functions", "disable", "switches", "swtiches");
  assert.equal(typo.code, 1);
  assert.match(typo.err, /Cannot disable "swtiches": no worker function has that name/);
  assert.deepEqual(await enabledOf(db), { switches: true }, "nothing changed");
  const off = await opsDone(db, "functions", "disable", "switches");
  assert.equal(off.out, ["FUNCTION  WAS      NOW", "switches  enabled  disabled"].join("\n"));
  const on = await opsDone(db, "functions", "enable", "switches", "--json");
  assert.deepEqual(JSON.parse(on.out), [{
    function_name: "switches",
    was_tracked: true,
    previous_enabled: false,
    enabled: true,
  }]);
  const deprecated = await opsDone(db, "functions", "deprecate", "switches");
  assert.match(deprecated.out, /^Deprecated 1 workers of switches/);
  await worker.done;

  await db.sql`select pgmq.send('switches', '{"garbage": true}')`;
  const [{ id }] = await db.sql`select max(msg_id)::text as id from pgmq.q_switches`;
  const [{ run_id: runId }] = await db
    .sql`select sluice.start_flow('switches', '{"n": 1}') as run_id`;
  const [{ message_id: live }] = await db.sql`
    select message_id::text from sluice.step_tasks where run_id = ${runId}
  `;
  const refused = await opsDone(db, "queues", "archive", "switches", id, live);
  assert.equal(refused.code, 1);
  assert.match(
    refused.err,
    new RegExp(`message ${live} of queue "switches": it carries task .* queued`),
  );
  const archived = await opsDone(db, "queues", "archive", "switches", id, "999999");
  assert.equal(archived.code, 0, archived.err);
  assert.equal(
    archived.out,
    `Archived messages ${id} of queue switches.\nNot in queue switches (already archived or deleted): 999999.`,
  );
  assert.equal((await opsDone(db, "queues", "archive", "switches", "x1")).code, 1);

  await db.sql`
    update sluice.worker_functions set updated_at = now() - interval '2 days';
  `;
  await db.sql`
    update sluice.workers
    set stopped_at = now() - interval '2 days', last_heartbeat_at = now() - interval '2 days'
  `;
  const pruned = await opsDone(db, "functions", "prune", "1 day");
  assert.equal(pruned.out, "Pruned 1 worker functions without a worker for 1 day: switches.");
});

Deno.test("a database without sluice gets one clear line, not a missing relation", async () => {
  await using db = await freshDatabase({ empty: true });
  const result = await opsDone(db, "runs");
  assert.equal(result.code, 1);
  assert.equal(
    result.err,
    "Cannot run ops runs: sluice is not installed in this database (schema sluice missing); " +
      "apply its migrations with `deno task sluice migrate` (or `supabase migration up` after " +
      "`deno task sluice install`)",
  );
});

Deno.test("fence drain and restore reject a bad --timeout before changing anything", async () => {
  await using db = await freshDatabase();
  await db.sql`select sluice.track_worker_function('fn-a')`;
  await db.sql`update sluice.worker_functions set enabled = false`;
  const manifest = await writeManifest([manifestEntry("a", "fn-a")]);
  const state = `${await Deno.makeTempDir()}/fence.json`;
  await Deno.writeTextFile(
    state,
    JSON.stringify({
      recorded_at: "2026-11-30T00:00:00Z",
      manifest,
      old_manifest: null,
      functions: [{
        function_name: "fn-a",
        enabled: true,
        tracked: true,
        deployed: true,
        change: "unchanged",
      }],
    }),
  );
  for (const command of ["drain", "restore"]) {
    const result = await opsDone(db, "fence", command, "--state", state, "--timeout", "soon");
    assert.equal(result.code, 1);
    assert.match(
      result.err,
      new RegExp(
        `^Cannot run ops fence ${command}: --timeout must be a duration such as 90s, ` +
          '5m or 1h, got "soon"$',
      ),
    );
  }
  assert.deepEqual(await enabledOf(db), { "fn-a": false });
  const missing = await opsDone(db, "fence", "disable", "--state", `${state}.none`);
  assert.equal(missing.code, 1);
  assert.match(missing.err, /no such file; run fence record first/);
});

Deno.test("ops --help lists the two-word commands, and each one's --help its options", async () => {
  const out = new Output();
  assert.equal(await main(["--help"], { io: out.io }), 0);
  for (const name of ["fence drain", "functions deprecate", "queues archive", "runs", "run"]) {
    assert.match(out.text, new RegExp(`^  ${name} `, "m"));
  }
  const drain = new Output();
  assert.equal(await main(["fence", "drain", "--help"], { io: drain.io }), 0);
  assert.match(
    drain.text,
    /^Usage: sluice fence drain \[--state FILE\] \[--functions NAME,\.\.\.\] \[--timeout DURATION\]$/m,
  );
  assert.match(drain.text, /^ {2}--timeout DURATION +give up after this long/m);
  const archive = new Output();
  assert.equal(await main(["queues", "archive", "--help"], { io: archive.io }), 0);
  assert.match(
    archive.text,
    /^Usage: sluice queues archive <queue> <message_id>\.\.\.$/m,
  );
  const group = new Output();
  assert.equal(await main(["fence"], { databaseUrl: "x", io: group.io }), 2);
  assert.match(group.errors, /^Cannot run sluice "fence": give one of fence diff, fence record, /);
  const usage = new Output();
  assert.equal(await main(["queues", "archive", "q"], { databaseUrl: "x", io: usage.io }), 2);
  assert.match(usage.errors, /^Cannot run ops queues archive: expected <queue> <message_id>/);
});

Deno.test("fence on Edge: a disabled function starts nothing; restore and one request bring a fresh worker; enabled, a deprecated function's worker comes back", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const flow = new Flow({ slug: "edge_fence" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  await using handler = testHandler(flow, db, new LogCapture(), {
    lifecycleEvents: new EventTarget(),
    selfUrl: functionUrl.url,
  });
  await using server = serve(handler.fetch);
  const first = await call(server.url);
  assert.equal(first.body.status, "running");
  const manifest = await writeManifest([manifestEntry("edge_fence", "edge-fence")]);
  const state = `${await Deno.makeTempDir()}/fence.json`;

  for (const step of ["record", "disable", "drain"]) {
    const args = ["fence", step, "--state", state, "--manifest", manifest];
    const result = await opsDone(db, ...(step === "record" ? args : args.slice(0, 4)));
    assert.equal(result.code, 0, `${step}: ${result.err}`);
  }
  assert.deepEqual(await workerCounts(db, "edge-fence"), { started: 1, live: 0 });
  const fenced = await call(server.url);
  assert.equal(fenced.status, 503);
  assert.equal(fenced.body.status, "disabled");
  assert.deepEqual(await workerCounts(db, "edge-fence"), { started: 1, live: 0 });

  const restore = ops(db, ["fence", "restore", "--state", state, "--timeout", "60s"]);
  await waitUntil(
    () => /waiting for a fresh worker of edge-fence$/m.test(restore.output.text),
    "restore to wait for a worker",
  );
  const second = await call(server.url);
  assert.equal(second.body.status, "running");
  assert.notEqual(second.body.workerId, first.body.workerId);
  assert.equal(await restore.code, 0, restore.output.errors);

  // Deprecation drains the worker, but the function is enabled: the next request starts another.
  assert.equal((await opsDone(db, "functions", "deprecate", "edge-fence")).code, 0);
  await waitUntil(async () => (await workerCounts(db, "edge-fence")).live === 0 || null, "drain");
  const third = await call(server.url);
  assert.equal(third.body.status, "running");
  assert.deepEqual(await workerCounts(db, "edge-fence"), { started: 3, live: 1 });
  assert.ok(edge.pending.length > 0, "the workers ran inside EdgeRuntime.waitUntil");
});

Deno.test("run --watch prints the tree again as the run's events change it, every progress step included", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "watched",
    progressInterval: 0,
    steps: [{ slug: "each", type: "map" }, { slug: "sum", deps: ["each"] }],
  });
  const runId = await startSqlFlow(db.sql, "watched", [1, 2, 3]);
  const workerId = await registerWorker(db.sql, "watched", "watched");
  const tasks = await readAndClaim(db.sql, "watched", workerId, "watched");
  const { code, output } = ops(db, ["run", runId, "--watch"]);
  await waitUntil(() => /^each +started +0\/3/m.test(output.text), "the first view");
  // Polling the view would see some of these states at best; the events show each one.
  for (const task of tasks) await completeTask(db.sql, task, task.input);
  const [sum] = await readAndClaim(db.sql, "watched", workerId, "watched");
  await completeTask(db.sql, sum, 6);
  assert.equal(await code, 0, output.errors);
  const views = output.text.split(/\n(?=Run )/);
  const states = views.map((view) => view.match(/^each +(\w+) +(\d\/\d)/m)!.slice(1).join(" "));
  assert.deepEqual(
    states.filter((state, i) => state !== states[i - 1]),
    ["started 0/3", "started 1/3", "started 2/3", "completed 3/3"],
  );
  assert.match(views.at(-1)!, new RegExp(`^Run ${runId} of flow watched: completed$`, "m"));
  assert.match(views.at(-1)!, /^└ sum +completed +1\/1 +1 /m);
});
