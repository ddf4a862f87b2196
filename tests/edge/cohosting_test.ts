// A co-hosting worker function (`withStepQueues(flow, { functions })`, served by `serveWorkers`):
// one process over real HTTP hosts one worker per step of several flows, on one pool and one
// LISTEN session. Every step keeps its own queue, slots and `sluice.workers` row, so a flooded
// step in the function never starves a light one.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { serveWorkers, type ServeWorkersOptions } from "../../src/edge/mod.ts";
import { freshDatabase } from "../_db.ts";
import { call, latch, LogCapture, SECRET, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

const MAX_CONCURRENT = 2;
const FLOOD = 8;

/** The flows of one test: a heavy step whose handlers wait for `gate`, and a light flow. */
function flows(gate: Promise<void>) {
  const flood = withStepQueues(
    new Flow<{ n: number }>({ slug: "cohost_flood" })
      .step({ slug: "heavy" }, async (input) => {
        await gate;
        return input.n;
      }),
    { functions: { heavy: "office-light" } },
  );
  const light = withStepQueues(
    new Flow<{ n: number }>({ slug: "cohost_light" })
      .step({ slug: "score" }, (input) => input.n + 1)
      .step({ slug: "notify", dependsOn: ["score"] }, (deps) => deps.score * 2)
      .step({ slug: "archive", dependsOn: ["notify"] }, (deps) => deps.notify),
    // `archive` is not listed: it keeps its own function, cohost-light--archive.
    { functions: { score: "office-light", notify: "office-light" } },
  );
  return { flood, light };
}

function options(url: string, logs: LogCapture): ServeWorkersOptions {
  return {
    functionName: "office-light",
    connectionString: url,
    secret: SECRET,
    env: {},
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    handleSignals: false,
    maxConcurrent: MAX_CONCURRENT,
    heartbeatIntervalMs: 100,
    pollIntervalMs: 100,
    logLevel: "debug",
    logger: logs.sink,
  };
}

Deno.test("one co-hosting function runs a worker per hosted step on one pool and one LISTEN session; a flooded step never takes a light step's slots", async () => {
  await using db = await freshDatabase();
  // Count calls of sluice's functions in the function's sessions (opened after this).
  const [{ name }] = await db.sql`select current_database() as name`;
  await db.sql.unsafe(`alter database "${name}" set track_functions = 'all'`);
  const logs = new LogCapture();
  const gate = latch();
  const { flood, light } = flows(gate.promise);
  await using served = serveWorkers([flood, light], options(db.url, logs));
  const url = new URL(`http://127.0.0.1:${served.addr.port}/`);

  const { status, body } = await call(url);
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.status, "running");
  assert.equal(body.functionName, "office-light");
  assert.deepEqual(
    body.workers?.map((w) => [w.flowSlug, w.stepSlug, w.queue, w.status]),
    [
      ["cohost_flood", "heavy", "cohost_flood__heavy", "running"],
      ["cohost_light", "score", "cohost_light__score", "running"],
      ["cohost_light", "notify", "cohost_light__notify", "running"],
    ],
  );

  // One sluice.workers row per hosted step, all under the one function.
  const rows = await db.sql`
    select function_name, flow_slug, step_slug, queue_name from sluice.workers
    where stopped_at is null order by flow_slug, step_slug`;
  assert.deepEqual(rows.map((r) => [r.function_name, r.flow_slug, r.step_slug, r.queue_name]), [
    ["office-light", "cohost_flood", "heavy", "cohost_flood__heavy"],
    ["office-light", "cohost_light", "notify", "cohost_light__notify"],
    ["office-light", "cohost_light", "score", "cohost_light__score"],
  ]);
  // Coverage: every hosted step is covered; the unlisted step is not (its own function is not
  // deployed here).
  const coverage = await db.sql`
    select flow_slug, step_slug, live_workers, missing_worker from sluice.route_coverage
    order by flow_slug, step_index`;
  assert.deepEqual(coverage.map((r) => [r.flow_slug, r.step_slug, r.live_workers]), [
    ["cohost_flood", "heavy", 1],
    ["cohost_light", "score", 1],
    ["cohost_light", "notify", 1],
    ["cohost_light", "archive", 0],
  ]);
  // One LISTEN session for the three workers.
  const listening = await db.sql`
    select count(*)::int as n from pg_stat_activity
    where application_name = 'sluice-edge:office-light' and query ilike 'listen %'`;
  assert.equal(listening[0].n, 1);

  // One heartbeat per worker, but the process-wide sweeps (due waits, schedules) once per beat
  // for the function: the calls' ratio approaches 3 (three workers, one sweeper).
  const calls = async () => {
    const rows = await db.sql`
      select funcname, calls::int from pg_stat_user_functions
      where schemaname = 'sluice' and funcname in ('heartbeat_worker', 'release_due_waits')`;
    return Object.fromEntries(rows.map((row) => [row.funcname, row.calls]));
  };
  const beats = await waitUntil(async () => {
    const counted = await calls();
    return (counted.heartbeat_worker ?? 0) >= 30 ? counted : null;
  }, "30 heartbeats");
  assert.ok(
    beats.release_due_waits * 2 <= beats.heartbeat_worker,
    `sweeps ${beats.release_due_waits} for ${beats.heartbeat_worker} heartbeats`,
  );
  assert.ok(beats.release_due_waits > 0, "the function sweeps");
  console.log(
    `co-hosting function of 3 workers: ${beats.heartbeat_worker} heartbeats, ` +
      `${beats.release_due_waits} due-wait sweeps`,
  );

  // Flood the heavy step: its worker takes exactly its own MAX_CONCURRENT tasks and keeps them.
  const floodRuns = await Promise.all(
    Array.from({ length: FLOOD }, (_, n) => startFlow(db.sql, flood, { n })),
  );
  const heavyStarted = async () => {
    const [row] = await db.sql`
      select count(*) filter (where status = 'started')::int as started,
        count(*) filter (where status = 'queued')::int as queued
      from sluice.step_tasks where flow_slug = 'cohost_flood'`;
    return row;
  };
  await waitUntil(async () => (await heavyStarted()).started === MAX_CONCURRENT, "heavy claims");

  // A light run goes through its two co-hosted steps while the heavy step is flooded (its last
  // step, in its own function, is not served here).
  const lightRun = await startFlow(db.sql, light, { n: 1 });
  await waitUntil(async () => {
    const [row] = await db.sql`
      select status from sluice.step_states where run_id = ${lightRun} and step_slug = 'notify'`;
    return row?.status === "completed";
  }, "the light steps while the heavy one is flooded");
  assert.deepEqual(await heavyStarted(), {
    started: MAX_CONCURRENT,
    queued: FLOOD - MAX_CONCURRENT,
  });
  const [{ score, notify }] = await db.sql`
    select (select output from sluice.step_states where run_id = ${lightRun}
        and step_slug = 'score') as score,
      (select output from sluice.step_states where run_id = ${lightRun}
        and step_slug = 'notify') as notify`;
  assert.deepEqual([score, notify], [2, 4]);

  // The flood drains once its handlers may finish.
  gate.resolve();
  for (const [n, runId] of floodRuns.entries()) {
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(30_000), flow: flood }), {
      heavy: n,
    });
  }
  await served.shutdown();
  const [stopped] = await db.sql`
    select count(*) filter (where stopped_at is null)::int as live from sluice.workers`;
  assert.equal(stopped.live, 0);
});

Deno.test("serveWorkers refuses a plain flow, a flow with no step in the function and a missing name, naming them", () => {
  const { flood, light } = flows(Promise.resolve());
  const base = options("postgres://localhost/x", new LogCapture());
  const plain = new Flow({ slug: "cohost_plain" }).step({ slug: "only" }, () => 1);
  assert.throws(
    () => serveWorkers([flood, plain], base),
    /flow "cohost_plain" is a plain flow, served by its own function/,
  );
  assert.throws(
    () => serveWorkers([light], { ...base, functionName: "office-payments" }),
    /Cannot create worker handler for "office-payments": flow "cohost_light" has no step hosted by it; its steps' functions: score -> office-light, notify -> office-light, archive -> cohost-light--archive/,
  );
  assert.throws(
    () => serveWorkers([light], { ...base, functionName: undefined as unknown as string }),
    /functionName must name the co-hosting function/,
  );
  assert.throws(() => serveWorkers([], base), /give the flows whose steps it hosts, got none/);
});
