// Aliases on the real database: sluice.activate_alias's compare-and-swap raced from separate
// connections, its history, namespace and live-worker refusals (nothing written on any of them),
// alias-first and concrete starts, deletes and development recompiles that keep aliases honest,
// and sluice.version_drain. Through the client API (src/client/aliases.ts), which maps the
// SQLSTATEs SLA01/SLA02 to typed errors.
import assert from "node:assert/strict";
import {
  activateAlias,
  AliasConflictError,
  AliasWorkersMissingError,
  getAlias,
  getAliasHistory,
  getVersionDrain,
} from "../../src/admin/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { latch, waitUntil } from "../_support.ts";
import {
  compile,
  compileFlow,
  completeTask,
  definition,
  type FlowSpec,
  readAndClaim,
  registerWorker,
  type Sql,
} from "./_fixtures.ts";

const ORDERS: FlowSpec = { slug: "orders", steps: [{ slug: "total" }] };
const ORDERS_V2: FlowSpec = {
  slug: "orders_v2",
  queueMode: "step",
  steps: [{ slug: "total" }, { slug: "notify", deps: ["total"] }],
};

/** Registers a live worker of a step-queued flow's one step, as a step worker does. */
async function registerStepWorker(sql: Sql, flow: string, step: string): Promise<string> {
  const workerId = crypto.randomUUID();
  const functionName = `${flow}--${step}`;
  await sql`select sluice.track_worker_function(${functionName})`;
  await sql`
    select sluice.register_worker(${workerId}, ${functionName}, ${`${flow}__${step}`}, ${flow},
      ${step})
  `;
  return workerId;
}

/** V1 and V2 compiled, every route of both served by a live worker; returns V1's worker. */
async function twoVersions(db: TestDatabase): Promise<string> {
  await compileFlow(db.sql, ORDERS);
  await compileFlow(db.sql, ORDERS_V2);
  const v1Worker = await registerWorker(db.sql, "orders", "orders");
  await registerStepWorker(db.sql, "orders_v2", "total");
  await registerStepWorker(db.sql, "orders_v2", "notify");
  return v1Worker;
}

/** Everything an activation may write. */
async function aliasState(sql: Sql) {
  return {
    aliases: [...await sql`select * from sluice.aliases order by alias`],
    history: [...await sql`select * from sluice.alias_history order by alias, generation`],
  };
}

/** Runs `fn`, expects it to throw, and checks that nothing an activation writes changed. */
async function refusedWithoutWrites<E>(
  sql: Sql,
  fn: () => Promise<unknown>,
  check: (error: E) => void,
): Promise<void> {
  const before = await aliasState(sql);
  await assert.rejects(fn, (error: E) => {
    check(error);
    return true;
  });
  assert.deepEqual(await aliasState(sql), before, "a refused activation writes nothing");
}

Deno.test("activate_alias: of 8 connections racing one generation exactly one wins per round; history contiguous", async () => {
  await using db = await freshDatabase();
  const flows = ["orders", ...Array.from({ length: 8 }, (_, i) => `target_${i}`)];
  for (const slug of flows) {
    await compileFlow(db.sql, { slug, steps: [{ slug: "s" }] });
    await registerWorker(db.sql, slug, slug);
  }
  const clients = Array.from({ length: 8 }, () => db.connect(1));
  // Every client connected before the race, so the attempts overlap.
  await Promise.all(clients.map((client) => client`select 1`));
  let current = "orders";
  for (let round = 1; round <= 5; round++) {
    // Each racer re-points the alias to a different flow than it points at: none is a no-op.
    const targets = flows.filter((slug) => slug !== current);
    const results = await Promise.allSettled(
      clients.map((client, i) =>
        activateAlias(client, "orders", targets[i], { expectedGeneration: round })
      ),
    );
    const won = results.flatMap((result, i) =>
      result.status === "fulfilled" ? [{ target: targets[i], generation: result.value }] : []
    );
    assert.equal(won.length, 1, `round ${round}: ${JSON.stringify(results)}`);
    assert.equal(won[0].generation, round + 1);
    current = won[0].target;
    for (const result of results) {
      if (result.status === "fulfilled") continue;
      const error = result.reason;
      assert.ok(error instanceof AliasConflictError, String(error));
      assert.equal(error.expectedGeneration, round);
      assert.equal(error.actualGeneration, round + 1);
      assert.equal(error.actualFlowSlug, current);
    }
    assert.equal((await getAlias(db.sql, "orders"))?.flowSlug, current);
  }
  const history = await getAliasHistory(db.sql, "orders");
  assert.deepEqual(history.map((entry) => entry.generation), [1, 2, 3, 4, 5, 6]);
  for (let i = 1; i < history.length; i++) {
    assert.equal(history[i].previousFlowSlug, history[i - 1].flowSlug);
  }
});

Deno.test("activate_alias: a creation race with expected generation 0 has one winner", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  const clients = Array.from({ length: 8 }, () => db.connect(1));
  await Promise.all(clients.map((client) => client`select 1`));
  const results = await Promise.allSettled(
    clients.map((client, i) =>
      activateAlias(client, "orders_api", i % 2 === 0 ? "orders" : "orders_v2", {
        expectedGeneration: 0,
      })
    ),
  );
  const won = results.filter((result) => result.status === "fulfilled");
  assert.equal(won.length, 1, JSON.stringify(results));
  const alias = await getAlias(db.sql, "orders_api");
  for (const result of results) {
    if (result.status === "fulfilled") continue;
    assert.ok(result.reason instanceof AliasConflictError, String(result.reason));
    assert.equal(result.reason.actualGeneration, 1);
    assert.equal(result.reason.actualFlowSlug, alias?.flowSlug);
  }
  assert.equal((await getAliasHistory(db.sql, "orders_api")).length, 1);
});

Deno.test("alias history records previous flow, who (default: the database user) and force; it is append-only", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  assert.equal(await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }), 2);
  assert.equal(
    await activateAlias(db.sql, "orders", "orders", {
      expectedGeneration: 2,
      activatedBy: "rollback by ada",
    }),
    3,
  );
  const [{ user }] = await db.sql`select current_user as user`;
  const history = await getAliasHistory(db.sql, "orders");
  assert.deepEqual(
    history.map(({ generation, flowSlug, previousFlowSlug, activatedBy, forced }) => ({
      generation,
      flowSlug,
      previousFlowSlug,
      activatedBy,
      forced,
    })),
    [
      {
        generation: 1,
        flowSlug: "orders",
        previousFlowSlug: null,
        activatedBy: user,
        forced: false,
      },
      {
        generation: 2,
        flowSlug: "orders_v2",
        previousFlowSlug: "orders",
        activatedBy: user,
        forced: false,
      },
      {
        generation: 3,
        flowSlug: "orders",
        previousFlowSlug: "orders_v2",
        activatedBy: "rollback by ada",
        forced: false,
      },
    ],
  );
  await assert.rejects(
    () => db.sql`update sluice.alias_history set activated_by = 'someone else'`,
    /Cannot update sluice.alias_history: the alias history is append-only/,
  );
  await assert.rejects(
    () => db.sql`delete from sluice.alias_history where alias = 'orders'`,
    /Cannot delete sluice.alias_history: the alias history is append-only/,
  );
  assert.equal((await getAliasHistory(db.sql, "orders")).length, 3);
});

Deno.test("alias namespace: case-only twins refused; a flow's name can only be its re-pointed self-alias", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  await activateAlias(db.sql, "orders_api", "orders", { expectedGeneration: 0 });

  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "Orders_Api", "orders_v2", { expectedGeneration: 0 }),
    (error: Error) =>
      assert.match(
        error.message,
        /^Cannot activate alias "Orders_Api": it differs only in case from the flow or alias "orders_api"$/,
      ),
  );
  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "ORDERS_V2", "orders", { expectedGeneration: 0 }),
    (error: Error) =>
      assert.match(error.message, /differs only in case from the flow or alias "orders_v2"/),
  );
  // Creating a new alias named like another flow: that name is the flow's self-alias already.
  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "orders_v2", "orders", { expectedGeneration: 0 }),
    (error: AliasConflictError) => {
      assert.ok(error instanceof AliasConflictError);
      assert.equal(error.actualGeneration, 1);
      assert.equal(error.actualFlowSlug, "orders_v2");
    },
  );
  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "orders_x", "no_such_flow", { expectedGeneration: 0 }),
    (error: Error) =>
      assert.match(error.message, /^Cannot activate alias "orders_x": no flow "no_such_flow"/),
  );
  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "not a slug", "orders", { expectedGeneration: 0 }),
    (error: Error) =>
      assert.match(error.message, /^Cannot activate alias 'not a slug': an alias is a slug/),
  );
  // The V1 -> V2 upgrade: the self-alias of orders is re-pointed, the callers' name stays.
  assert.equal(await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }), 2);
  assert.deepEqual((await getAlias(db.sql, "orders"))?.flowSlug, "orders_v2");
  // A flow compiled later may not take a case twin of an alias's name.
  const twin = await compile(db.sql, definition({ slug: "Orders_Api", steps: [{ slug: "s" }] }))
    .catch((error: Error) => error);
  assert.ok(twin instanceof Error);
  assert.match(
    twin.message,
    /Cannot compile flow "Orders_Api": it differs only in case from the alias "orders_api"/,
  );
});

Deno.test("live-worker check: every unserved step is named, deprecated workers do not count, force bypasses and is recorded", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, ORDERS);
  await compileFlow(db.sql, ORDERS_V2);
  await registerStepWorker(db.sql, "orders_v2", "total");
  const deprecated = await registerStepWorker(db.sql, "orders_v2", "notify");
  await db.sql`update sluice.workers set deprecated_at = now() where worker_id = ${deprecated}`;

  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }),
    (error: AliasWorkersMissingError) => {
      assert.ok(error instanceof AliasWorkersMissingError, String(error));
      assert.deepEqual(error.missingRoutes, [{
        stepSlug: "notify",
        queueName: "orders_v2__notify",
      }]);
      assert.match(error.message, /no live worker serves step notify \(queue orders_v2__notify\)/);
    },
  );
  // No worker at all: both steps, in step order.
  await db.sql`update sluice.workers set deprecated_at = now()`;
  await refusedWithoutWrites(
    db.sql,
    () => activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }),
    (error: AliasWorkersMissingError) =>
      assert.deepEqual(error.missingRoutes.map((route) => route.stepSlug), ["total", "notify"]),
  );
  // A stale heartbeat is no live worker either.
  await registerStepWorker(db.sql, "orders_v2", "total");
  await registerStepWorker(db.sql, "orders_v2", "notify");
  await db.sql`update sluice.workers set last_heartbeat_at = now() - interval '1 hour'`;
  await assert.rejects(
    () => activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }),
    AliasWorkersMissingError,
  );

  assert.equal(
    await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1, force: true }),
    2,
  );
  const [, forced] = await getAliasHistory(db.sql, "orders");
  assert.equal(forced.forced, true);
  // Confirming the current target is a no-op even while its workers are down.
  assert.equal(await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 2 }), 2);
  assert.equal((await getAliasHistory(db.sql, "orders")).length, 2);
});

Deno.test("a switch moves no run: start_flow goes through the alias, start_flow_version stays on V1, runs record started_via", async () => {
  await using db = await freshDatabase();
  const v1Worker = await twoVersions(db);
  const [{ before }] = await db.sql`select sluice.start_flow('orders', '{"id": 1}') as before`;
  const tasksBefore = await db.sql`
    select run_id, step_slug, flow_slug, queue_name, message_id, status from sluice.step_tasks
    order by run_id
  `;
  const messagesBefore = await db.sql`select msg_id, message from pgmq.q_orders order by msg_id`;

  await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 });
  const [{ after }] = await db.sql`select sluice.start_flow('orders', '{"id": 2}') as after`;
  const [{ concrete }] = await db
    .sql`select sluice.start_flow_version('orders', '{"id": 3}') as concrete`;
  await assert.rejects(
    () => db.sql`select sluice.start_flow_version('orders_api', '{}')`,
    /Cannot start flow "orders_api": no such flow/,
  );

  const runs = await db.sql`
    select run_id, flow_slug, started_via from sluice.runs order by started_at, run_id
  `;
  const byId = Object.fromEntries(
    runs.map((run) => [run.run_id, [run.flow_slug, run.started_via]]),
  );
  assert.deepEqual(byId[before], ["orders", "orders"]);
  assert.deepEqual(byId[after], ["orders_v2", "orders"]);
  assert.deepEqual(byId[concrete], ["orders", "orders"]);
  const [task] = await db.sql`select queue_name from sluice.step_tasks where run_id = ${after}`;
  assert.equal(task.queue_name, "orders_v2__total", "the new run's task is on V2's queue");

  assert.deepEqual(
    [
      ...await db.sql`
      select run_id, step_slug, flow_slug, queue_name, message_id, status from sluice.step_tasks
      where run_id = ${before}
    `,
    ],
    [...tasksBefore],
    "V1's task keeps its flow, queue and message",
  );
  const v1Messages = await db.sql`select msg_id, message from pgmq.q_orders order by msg_id`;
  assert.deepEqual([...v1Messages].slice(0, messagesBefore.length), [...messagesBefore]);
  // V1's worker still claims V1's task from V1's queue.
  const claimed = await readAndClaim(db.sql, "orders", v1Worker, "orders");
  assert.deepEqual(claimed.map((t) => t.run_id).sort(), [before, concrete].sort());
});

Deno.test("delete_flow_and_data refuses while a foreign alias points at the flow, and works once it moved", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 });
  await assert.rejects(
    () => db.sql`select sluice.delete_flow_and_data('orders_v2')`,
    /^PostgresError: Cannot delete flow "orders_v2": alias "orders" points at it; activate the alias on another flow first$|Cannot delete flow "orders_v2": alias "orders" points at it/,
  );
  assert.equal((await db.sql`select 1 from sluice.flows where flow_slug = 'orders_v2'`).length, 1);
  // V1 itself may go: its self-alias points elsewhere and stays.
  await db.sql`select sluice.delete_flow_and_data('orders', force => true)`;
  assert.equal((await getAlias(db.sql, "orders"))?.flowSlug, "orders_v2");

  await compileFlow(db.sql, { slug: "orders_v3", steps: [{ slug: "total" }] });
  await registerWorker(db.sql, "orders_v3", "orders_v3");
  await activateAlias(db.sql, "orders", "orders_v3", { expectedGeneration: 2 });
  await db.sql`select sluice.delete_flow_and_data('orders_v2', force => true)`;
  assert.equal(
    (await db.sql`select 1 from sluice.aliases where flow_slug = 'orders_v2'`).length,
    0,
  );
});

Deno.test("a development recompile keeps a foreign alias (same generation) and still works", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, ORDERS);
  await registerWorker(db.sql, "orders", "orders");
  await activateAlias(db.sql, "orders_api", "orders", { expectedGeneration: 0 });
  await activateAlias(db.sql, "orders_api", "orders", { expectedGeneration: 1 });
  const before = await getAlias(db.sql, "orders_api");
  await db.sql`update sluice.workers set stopped_at = now()`;

  const changed = definition({
    slug: "orders",
    steps: [{ slug: "total" }, { slug: "ship", deps: ["total"] }],
  });
  const result = await compile(db.sql, changed, "development");
  assert.equal(result.outcome, "recompiled", JSON.stringify(result));
  assert.deepEqual(await getAlias(db.sql, "orders_api"), before);
  const [{ run_id: runId }] = await db
    .sql`select sluice.start_flow('orders_api', '{"id": 1}') as run_id`;
  const states = await db
    .sql`select step_slug from sluice.step_states where run_id = ${runId} order by 1`;
  assert.deepEqual(states.map((row) => row.step_slug), ["ship", "total"], "the new shape runs");
});

Deno.test("a reset flow's self-alias continues its generations, so an old expected generation loses", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 });
  await activateAlias(db.sql, "orders", "orders", { expectedGeneration: 2 });
  await db.sql`select sluice.delete_flow_and_data('orders', force => true)`;
  await compileFlow(db.sql, ORDERS);
  await registerWorker(db.sql, "orders", "orders");

  const alias = await getAlias(db.sql, "orders");
  assert.equal(alias?.generation, 4, "one past the highest generation the name ever had");
  // A generation read before the reset does not win against the new alias.
  await assert.rejects(
    () => activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 }),
    AliasConflictError,
  );
  assert.equal(await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 4 }), 5);
  assert.deepEqual((await getAliasHistory(db.sql, "orders")).map((row) => row.generation), [
    1,
    2,
    3,
    4,
    5,
  ]);
});

Deno.test("an alias created on a name a deleted flow used continues that name's generations", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  await db.sql`select sluice.delete_flow_and_data('orders', force => true)`;
  assert.equal(await getAlias(db.sql, "orders"), null, "the self-alias went with its flow");

  // Generation 1 of "orders" is in the append-only history: the new alias starts after it.
  assert.equal(
    await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 0, force: true }),
    2,
  );
  assert.deepEqual(
    (await getAliasHistory(db.sql, "orders")).map((row) => [row.generation, row.flowSlug]),
    [[1, "orders"], [2, "orders_v2"]],
  );
});

Deno.test("version_drain counts active runs, queued and started tasks, live workers and aliases", async () => {
  await using db = await freshDatabase();
  const v1Worker = await twoVersions(db);
  const drain = () => getVersionDrain(db.sql, "orders");
  assert.equal(await getVersionDrain(db.sql, "no_such_flow"), null);
  assert.deepEqual(await drain(), {
    flowSlug: "orders",
    aliases: [],
    selfAliasPointsAt: "orders",
    activeRuns: 0,
    queuedTasks: 0,
    startedTasks: 0,
    liveWorkers: 1,
    workDrained: true,
    drained: false,
  });

  const [{ first }] = await db.sql`select sluice.start_flow('orders', '{"id": 1}') as first`;
  await db.sql`select sluice.start_flow('orders', '{"id": 2}')`;
  await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 });
  await activateAlias(db.sql, "orders_api", "orders", { expectedGeneration: 0 });
  await db.sql`select sluice.start_flow('orders', '{"id": 3}')`;
  assert.deepEqual(
    { ...await drain() },
    {
      flowSlug: "orders",
      aliases: ["orders_api"],
      selfAliasPointsAt: "orders_v2",
      activeRuns: 2,
      queuedTasks: 2,
      startedTasks: 0,
      liveWorkers: 1,
      workDrained: false,
      drained: false,
    },
    "the run started through the re-pointed name is V2's",
  );

  const claimed = await readAndClaim(db.sql, "orders", v1Worker, "orders");
  assert.equal(claimed.length, 2);
  let state = await drain();
  assert.deepEqual([state?.queuedTasks, state?.startedTasks], [0, 2]);

  for (const task of claimed) assert.equal(await completeTask(db.sql, task, 1), "completed");
  state = await drain();
  assert.deepEqual([state?.activeRuns, state?.startedTasks, state?.workDrained, state?.drained], [
    0,
    0,
    true,
    false,
  ]);
  const [run] = await db.sql`select status from sluice.runs where run_id = ${first}`;
  assert.equal(run.status, "completed");

  await db.sql`update sluice.workers set stopped_at = now() where flow_slug = 'orders'`;
  state = await drain();
  assert.deepEqual([state?.liveWorkers, state?.drained], [0, false], "an alias still points at it");
  await activateAlias(db.sql, "orders_api", "orders_v2", { expectedGeneration: 1 });
  state = await drain();
  assert.deepEqual([state?.aliases, state?.drained], [[], true]);
});

Deno.test("version_drain waits for a producer transaction opened before the alias switch: its V1 run is counted, not missed", async () => {
  await using db = await freshDatabase();
  await twoVersions(db);
  const started = latch();
  const commit = latch();
  const producer = db.sql.begin(async (tx) => {
    await tx`select sluice.start_flow('orders', '{"id": 1}')`;
    started.resolve();
    await commit.promise;
  });
  await started.promise;
  await activateAlias(db.sql, "orders", "orders_v2", { expectedGeneration: 1 });

  const drain = getVersionDrain(db.sql, "orders");
  // The drain check waits on the start lock the producer's transaction holds.
  await waitUntil(async () => {
    const [{ waiting }] = await db.sql`
      select count(*)::int as waiting from pg_stat_activity
      where wait_event_type = 'Lock' and wait_event = 'advisory' and query like '%sluice.starts:%'`;
    return waiting > 0 ? true : null;
  }, "the drain check to wait for the producer's transaction");
  commit.resolve();
  await producer;
  const seen = await drain;
  assert.equal(seen?.activeRuns, 1);
  assert.equal(seen?.workDrained, false);
});
