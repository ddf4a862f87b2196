// startFlow() with a concrete flow, a deployed flow and a name once an alias was re-pointed, and
// startFlow() inside the caller's transaction.
import assert from "node:assert/strict";
import { activateAlias } from "../../src/deploy/aliases.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { getRun } from "../../src/client/get_run.ts";
import { getRunTasks } from "../../src/client/get_run_tasks.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { defineDeployedFlow } from "../../src/dsl/deployed_flow.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";

const ordersV1 = new Flow<{ orderId: number }>({ slug: "orders" })
  .step({ slug: "load" }, (input) => input.orderId);
const ordersV2 = withStepQueues(
  new Flow<{ order: { id: number } }>({ slug: "orders_v2" })
    .step({ slug: "load" }, (input) => input.order.id),
);
const orders = defineDeployedFlow(ordersV2, { alias: "orders" });

async function runRow(db: TestDatabase, runId: string) {
  const [row] = await db.sql`
    select r.flow_slug, r.started_via, t.queue_name
    from sluice.runs r join sluice.step_tasks t using (run_id)
    where r.run_id = ${runId}::uuid`;
  return { ...row };
}

Deno.test("a concrete flow starts that flow even when its name now points at another version; a deployed flow starts through its alias", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, ordersV1);
  await compileFlow(db.sql, orders);

  // Before the switch the alias "orders" is V1's self-alias.
  assert.deepEqual(await runRow(db, await startFlow(db.sql, orders, { order: { id: 1 } })), {
    flow_slug: "orders",
    started_via: "orders",
    queue_name: "orders",
  });

  await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1, force: true });

  // The V1 object starts V1, with V1's input type, by its concrete slug.
  assert.deepEqual(await runRow(db, await startFlow(db.sql, ordersV1, { orderId: 2 })), {
    flow_slug: "orders",
    started_via: "orders",
    queue_name: "orders",
  });
  // The deployed flow and the alias string start wherever the alias points now.
  assert.deepEqual(await runRow(db, await startFlow(db.sql, orders, { order: { id: 3 } })), {
    flow_slug: "orders_v2",
    started_via: "orders",
    queue_name: "orders_v2__load",
  });
  assert.deepEqual(await runRow(db, await startFlow(db.sql, "orders", { order: { id: 4 } })), {
    flow_slug: "orders_v2",
    started_via: "orders",
    queue_name: "orders_v2__load",
  });
  // The wrapped concrete flow starts itself, never through an alias.
  assert.deepEqual(await runRow(db, await startFlow(db.sql, ordersV2, { order: { id: 5 } })), {
    flow_slug: "orders_v2",
    started_via: "orders_v2",
    queue_name: "orders_v2__load",
  });
});

Deno.test("a concrete flow that is not compiled is refused by its slug, not started through an alias", async () => {
  await using db = await freshDatabase();
  const other = new Flow<{ order: { id: number } }>({ slug: "orders_v3" })
    .step({ slug: "load" }, (input) => input.order.id);
  await compileFlow(db.sql, other);
  await activateAlias(db.sql, "orders_v9", "orders_v3", { expectedGeneration: 0, force: true });
  const v9 = new Flow<{ order: { id: number } }>({ slug: "orders_v9" })
    .step({ slug: "load" }, (input) => input.order.id);
  await assert.rejects(
    startFlow(db.sql, v9, { order: { id: 1 } }),
    /Cannot start flow "orders_v9": no such flow/,
  );
  const [{ runs }] = await db.sql`select count(*)::int as runs from sluice.runs`;
  assert.equal(runs, 0);
});

Deno.test("startFlow() on a transaction: a rollback leaves no run and no message, a commit leaves both", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, ordersV1);
  await db.sql`create table public.app_orders (id int primary key)`;
  const state = async () => {
    const [row] = await db.sql`
      select (select count(*)::int from public.app_orders) as app_rows,
        (select count(*)::int from sluice.runs) as runs,
        (select count(*)::int from sluice.step_tasks) as tasks,
        (select count(*)::int from pgmq.q_orders) as messages`;
    return { ...row };
  };

  let seenInside: string | null = null;
  await assert.rejects(
    db.sql.begin(async (tx) => {
      await tx`insert into public.app_orders (id) values (1)`;
      const runId = await startFlow(tx, ordersV1, { orderId: 1 });
      // The run is visible inside the transaction, through the producer reads too.
      seenInside = (await getRun(tx, runId))?.flowSlug ?? null;
      assert.equal((await getRunTasks(tx, runId)).length, 1);
      throw new Error("the caller's later write failed");
    }),
    /the caller's later write failed/,
  );
  assert.equal(seenInside, "orders");
  assert.deepEqual(await state(), { app_rows: 0, runs: 0, tasks: 0, messages: 0 });

  const runId = await db.sql.begin(async (tx) => {
    await tx`insert into public.app_orders (id) values (2)`;
    return await startFlow(tx, ordersV1, { orderId: 2 });
  });
  assert.deepEqual(await state(), { app_rows: 1, runs: 1, tasks: 1, messages: 1 });
  assert.equal((await getRun(db.sql, runId))?.status, "started");
});
