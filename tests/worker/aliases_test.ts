// Versions behind an alias with real workers: a V1 -> V2 switch (old runs finish on V1's queues
// and workers, new ones start on V2, no task moves), `activate: "on-startup"` for a step-queued
// V2 (the last step worker activates), two deployed workers racing for one alias, startup
// activation never moving an alias back, and a worker whose flow was reset under it stopping once.
import assert from "node:assert/strict";
import { activateAlias, getAlias, getAliasHistory } from "../../src/deploy/aliases.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { defineDeployedFlow } from "../../src/dsl/deployed_flow.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { latch, testWorker, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

type OrderInput = { orderId: number };

/** A two-step order flow whose outputs name its version; `gate` holds V1's first step. */
function ordersFlow(slug: string, version: string, gate?: Promise<void>) {
  return new Flow<OrderInput>({ slug, timeout: 10 })
    .step({ slug: "load" }, async (input) => {
      await gate;
      return { id: input.orderId, version };
    })
    .step({ slug: "ship", dependsOn: ["load"] }, (deps) => `${deps.load.version}:${deps.load.id}`);
}

async function tasksOf(db: TestDatabase, runId: string) {
  const rows = await db.sql`
    select t.step_slug, t.flow_slug, t.queue_name, t.last_worker_id::text as worker_id
    from sluice.step_tasks t where t.run_id = ${runId}::uuid order by t.step_slug`;
  return rows.map((row) => ({ ...row }));
}

async function runOf(db: TestDatabase, runId: string) {
  const [row] = await db.sql`
    select flow_slug, started_via from sluice.runs where run_id = ${runId}::uuid`;
  return { ...row };
}

Deno.test("V1 -> V2 through an alias: old runs finish on V1's queue and worker, new runs start on V2, no task moves", async () => {
  await using db = await freshDatabase();
  const gate = latch();
  const v1 = ordersFlow("orders", "v1", gate.promise);
  const v2 = withStepQueues(ordersFlow("orders_v2", "v2"));
  const orders = defineDeployedFlow(v2, { alias: "orders" });

  await using v1Worker = await testWorker(v1, db);
  // Before the switch the alias "orders" is V1's own name: the deployed flow starts V1.
  const before = await startFlow(db.sql, orders, { orderId: 1 });
  assert.deepEqual(await runOf(db, before), { flow_slug: "orders", started_via: "orders" });
  const [held] = await waitUntil(async () => {
    const tasks = await tasksOf(db, before);
    return tasks[0]?.worker_id ? tasks : null;
  }, "V1's worker to hold the first task");
  assert.deepEqual(held, {
    step_slug: "load",
    flow_slug: "orders",
    queue_name: "orders",
    worker_id: v1Worker.workerId,
  });

  await using v2Load = await testWorker(orders, db, { stepSlug: "load" });
  await using v2Ship = await testWorker(orders, db, { stepSlug: "ship" });
  assert.equal(v2Load.aliasActivation?.outcome, "manual");
  const current = await getAlias(db.sql, "orders");
  assert.deepEqual([current?.flowSlug, current?.generation], ["orders", 1]);
  assert.equal(
    await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }),
    2,
  );

  const viaDeployed = await startFlow(db.sql, orders, { orderId: 2 });
  const viaName = await startFlow(db.sql, "orders", { orderId: 3 });
  gate.resolve();

  assert.deepEqual(await waitForRun(db.sql, before, { timeoutMs: scaled(15_000), flow: orders }), {
    ship: "v1:1",
  });
  assert.deepEqual(
    await waitForRun(db.sql, viaDeployed, { timeoutMs: scaled(15_000), flow: orders }),
    {
      ship: "v2:2",
    },
  );
  assert.deepEqual(await waitForRun(db.sql, viaName, { timeoutMs: scaled(15_000) }), {
    ship: "v2:3",
  });

  // The old run stayed on V1: its held task and the task created after the switch.
  assert.deepEqual(await tasksOf(db, before), [
    held,
    { step_slug: "ship", flow_slug: "orders", queue_name: "orders", worker_id: v1Worker.workerId },
  ]);
  for (const runId of [viaDeployed, viaName]) {
    assert.deepEqual(await runOf(db, runId), { flow_slug: "orders_v2", started_via: "orders" });
    assert.deepEqual(await tasksOf(db, runId), [
      {
        step_slug: "load",
        flow_slug: "orders_v2",
        queue_name: "orders_v2__load",
        worker_id: v2Load.workerId,
      },
      {
        step_slug: "ship",
        flow_slug: "orders_v2",
        queue_name: "orders_v2__ship",
        worker_id: v2Ship.workerId,
      },
    ]);
  }
  // V1 has drained: its workers may stop.
  const [drain] = await db.sql`
    select active_runs, queued_tasks, started_tasks, self_alias_points_at, work_drained
    from sluice.version_drain where flow_slug = 'orders'`;
  assert.deepEqual({ ...drain }, {
    active_runs: 0,
    queued_tasks: 0,
    started_tasks: 0,
    self_alias_points_at: "orders_v2",
    work_drained: true,
  });
});

Deno.test('activate: "on-startup" for a step-queued V2: earlier step workers report workers_missing, the last one activates', async () => {
  await using db = await freshDatabase();
  const v1 = ordersFlow("orders", "v1");
  const orders = defineDeployedFlow(withStepQueues(ordersFlow("orders_v2", "v2")), {
    alias: "orders",
  });
  await using _v1Worker = await testWorker(v1, db);

  await using load = await testWorker(orders, db, { stepSlug: "load", activate: "on-startup" });
  assert.deepEqual(load.aliasActivation, {
    alias: "orders",
    outcome: "workers_missing",
    generation: 1,
  });
  const [missing] = load.logs.find("info", "alias not activated yet");
  assert.deepEqual(missing.fields.missing_steps, ["ship"]);
  assert.equal((await getAlias(db.sql, "orders"))?.flowSlug, "orders");

  await using ship = await testWorker(orders, db, { stepSlug: "ship", activate: "on-startup" });
  assert.deepEqual(ship.aliasActivation, { alias: "orders", outcome: "activated", generation: 2 });
  const [started] = ship.logs.find("info", "worker started");
  assert.equal(started.fields.alias, "orders");
  assert.equal(started.fields.alias_activation, "activated");
  assert.equal(started.fields.alias_generation, 2);
  const history = await getAliasHistory(db.sql, "orders");
  assert.deepEqual(
    history.map((entry) => [entry.generation, entry.previousFlowSlug, entry.flowSlug]),
    [[1, null, "orders"], [2, "orders", "orders_v2"]],
  );
  assert.equal(history.at(-1)?.activatedBy, `worker ${ship.workerId} (orders-v2--ship)`);

  // Another worker of V2 (a respawn, a second replica) finds the alias already active.
  await using again = await testWorker(orders, db, { stepSlug: "load", activate: "on-startup" });
  assert.deepEqual(again.aliasActivation, {
    alias: "orders",
    outcome: "already_active",
    generation: 2,
  });
  const runId = await startFlow(db.sql, orders, { orderId: 7 });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000), flow: orders }), {
    ship: "v2:7",
  });
});

Deno.test("two deployed workers of different versions activating one alias at once: exactly one wins, the other reports the conflict, both keep serving", async () => {
  await using db = await freshDatabase();
  const v1 = ordersFlow("orders", "v1");
  const v2 = ordersFlow("orders_v2", "v2");
  const v3 = ordersFlow("orders_v3", "v3");
  await using _v1Worker = await testWorker(v1, db);

  // Hold the alias row so that both workers read generation 1 and then queue up on the swap.
  const holder = db.connect(1);
  const release = latch();
  const locked = latch();
  const holding = holder.begin(async (tx) => {
    await tx`select 1 from sluice.aliases where alias = 'orders' for update`;
    locked.resolve();
    await release.promise;
  });
  await locked.promise;
  const starting = Promise.all([
    testWorker(defineDeployedFlow(v2, { alias: "orders" }), db, { activate: "on-startup" }),
    testWorker(defineDeployedFlow(v3, { alias: "orders" }), db, { activate: "on-startup" }),
  ]);
  await waitUntil(async () => {
    const [{ waiting }] = await db.sql`
      select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'
        and query like '%activate_alias%'`;
    return waiting === 2;
  }, "both activations to wait for the alias row");
  release.resolve();
  await holding;
  await using w2 = (await starting)[0];
  await using w3 = (await starting)[1];

  const outcomes = [w2, w3].map((worker) => worker.aliasActivation?.outcome).sort();
  assert.deepEqual(outcomes, ["activated", "conflict"]);
  const [winner, loser] = w2.aliasActivation?.outcome === "activated" ? [w2, w3] : [w3, w2];
  assert.deepEqual(winner.aliasActivation?.generation, 2);
  assert.deepEqual(loser.aliasActivation?.generation, 2);
  const [conflict] = loser.logs.find("warn", "another activation changed it first");
  assert.deepEqual(
    [conflict.fields.expected_generation, conflict.fields.actual_generation],
    [1, 2],
  );
  assert.equal(conflict.fields.actual_flow_slug, winner.flowSlug);
  const alias = await getAlias(db.sql, "orders");
  assert.deepEqual([alias?.flowSlug, alias?.generation], [winner.flowSlug, 2]);
  assert.equal((await getAliasHistory(db.sql, "orders")).length, 2);

  // Both keep serving their concrete flow.
  for (const [flow, worker, version] of [[v2, w2, "v2"], [v3, w3, "v3"]] as const) {
    assert.equal(worker.status, "running");
    const runId = await startFlow(db.sql, flow, { orderId: 9 });
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000), flow }), {
      ship: `${version}:9`,
    });
  }
});

Deno.test('activate: "on-startup" never moves the alias back: a V2 respawn after V3 is superseded, and a V3 respawn does not undo an operator rollback to V2', async () => {
  await using db = await freshDatabase();
  const v2 = defineDeployedFlow(ordersFlow("orders_v2", "v2"), { alias: "orders" });
  const v3 = defineDeployedFlow(ordersFlow("orders_v3", "v3"), { alias: "orders" });

  const v2First = await testWorker(v2, db, { activate: "on-startup" });
  assert.equal(v2First.aliasActivation?.outcome, "activated");
  await using v3First = await testWorker(v3, db, { activate: "on-startup" });
  assert.equal(v3First.aliasActivation?.outcome, "activated");
  const afterV3 = await getAlias(db.sql, "orders");
  assert.equal(afterV3?.flowSlug, "orders_v3");
  await v2First[Symbol.asyncDispose]();

  // An Edge respawn of V2 during the drain: the alias stays on V3.
  await using v2Respawn = await testWorker(v2, db, { activate: "on-startup" });
  assert.deepEqual(v2Respawn.aliasActivation, {
    alias: "orders",
    outcome: "superseded",
    generation: afterV3?.generation,
  });
  assert.equal(v2Respawn.logs.find("warn", "alias not activated").length, 1);
  assert.deepEqual(await getAlias(db.sql, "orders"), afterV3);

  // The operator rolls back to V2; a V3 respawn does not undo it.
  const rolledBack = await activateAlias(db.sql, "orders", "orders_v2", {
    expectedGeneration: afterV3!.generation,
  });
  await using v3Respawn = await testWorker(v3, db, { activate: "on-startup" });
  assert.deepEqual(v3Respawn.aliasActivation, {
    alias: "orders",
    outcome: "superseded",
    generation: rolledBack,
  });
  const current = await getAlias(db.sql, "orders");
  assert.deepEqual([current?.flowSlug, current?.generation], ["orders_v2", rolledBack]);
  const history = await getAliasHistory(db.sql, "orders");
  assert.equal(history.filter((row) => row.activatedBy.startsWith("worker")).length, 2);
});

Deno.test("a worker whose flow was reset under it (flows reset --force) stops with one clear error instead of looping", async () => {
  await using db = await freshDatabase();
  const flow = ordersFlow("orders", "v1");
  await using worker = await testWorker(flow, db);
  await assert.rejects(
    db.sql`select sluice.delete_flow_and_data('orders')`,
    new RegExp(`Cannot delete flow "orders": live workers serve it: ${worker.workerId}`),
  );
  await db.sql`select sluice.delete_flow_and_data('orders', force => true)`;
  await waitUntil(() => worker.status === "fatal" || null, "the worker to stop");
  const fatal = worker.logs.find("fatal");
  assert.equal(fatal.length, 1);
  assert.match(fatal[0].message, /^Cannot serve queue "orders": it no longer exists/);
  assert.equal(worker.logs.find("error", "cannot read and claim").length, 0);
});
