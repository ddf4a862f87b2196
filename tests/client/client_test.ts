// The producer client: connect, compileFlow, startFlow, getRun, getRunTasks, waitForRun.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import type { Json } from "../../src/dsl/json.ts";
import {
  cancelRun,
  connect,
  FlowShapeMismatchError,
  getRun,
  getRunTasks,
  RecompileInFlightError,
  RunFailedError,
  RunTimeoutError,
  startFlow,
  waitForRun,
} from "../../src/client/mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { startWaitingRun, waitingFlow } from "../worker/_waiting_run.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker } from "../worker/_helpers.ts";
import { scaled } from "../_support.ts";

const orders = new Flow<{ orderId: number }>({ slug: "orders", timeout: 30 })
  .step({ slug: "load" }, (input) => ({ id: input.orderId }))
  .step({ slug: "ship", dependsOn: ["load"] }, (deps) => `shipped ${deps.load.id}`);

Deno.test("connect() opens a pool without prepared statements; bigints come back as strings", async () => {
  await using db = await freshDatabase();
  const sql = connect(db.url, { max: 2, applicationName: "client-test" });
  try {
    const [row] = await sql`
      select pgmq.create('q') as created, 9007199254740993::bigint as big,
        current_setting('application_name') as app`;
    assert.equal(row.big, "9007199254740993");
    assert.equal(row.app, "client-test");
    const [{ send }] = await sql`select pgmq.send('q', '{}'::jsonb) as send`;
    assert.equal(send, "1");
    assert.equal(sql.options.prepare, false);
    assert.equal(sql.options.max, 2);
  } finally {
    await sql.end();
  }
  assert.throws(() => connect(db.url, { max: 0 }), RangeError);
  assert.throws(() => connect(""), TypeError);
});

Deno.test("compileFlow() compiles a new flow, then verifies it and refreshes runtime options", async () => {
  await using db = await freshDatabase();
  assert.deepEqual(await compileFlow(db.sql, orders), { outcome: "compiled", differences: [] });
  assert.deepEqual(await compileFlow(db.sql, orders), { outcome: "verified", differences: [] });

  const slower = new Flow<{ orderId: number }>({ slug: "orders", timeout: 90 })
    .step({ slug: "load" }, (input) => ({ id: input.orderId }))
    .step({ slug: "ship", dependsOn: ["load"] }, (deps) => `shipped ${deps.load.id}`);
  assert.equal((await compileFlow(db.sql, slower)).outcome, "verified");
  const [{ opt_timeout }] = await db.sql`select opt_timeout from sluice.flows`;
  assert.equal(opt_timeout, 90);
});

Deno.test("compileFlow() in production throws FlowShapeMismatchError for a changed shape and changes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, orders);
  const changed = new Flow<{ orderId: number }>({ slug: "orders" })
    .step({ slug: "load" }, (input) => ({ id: input.orderId }))
    .step({ slug: "ship", dependsOn: ["load"], if: { load: { id: 1 } } }, () => "x");

  const error = await compileFlow(db.sql, changed).catch((e) => e);
  assert.ok(error instanceof FlowShapeMismatchError);
  assert.equal(error.name, "FlowShapeMismatchError");
  assert.equal(error.flowSlug, "orders");
  assert.equal(error.differences.length, 1);
  assert.match(error.differences[0], /^step 1 \("ship"\): required_input_pattern compiled null/);
  assert.match(error.message, /^Cannot compile flow "orders": the definition differs/);
  assert.match(error.message, / {2}- step 1 \("ship"\)/);
  assert.match(error.message, /new concrete slug \(e\.g\. "orders_v2"\)/);
  // The development way out, besides the production one.
  assert.match(error.message, /SLUICE_ENVIRONMENT=development, or sluice dev/);
  assert.match(error.message, /`sluice flows reset orders`$/);
  const [{ pattern }] = await db.sql`
    select required_input_pattern as pattern from sluice.steps where step_slug = 'ship'`;
  assert.equal(pattern, null);

  const v7 = new Flow({ slug: "orders_v7" }).step({ slug: "a" }, () => 1);
  await compileFlow(db.sql, v7);
  const v7changed = new Flow({ slug: "orders_v7" }).step({ slug: "b" }, () => 1);
  await assert.rejects(compileFlow(db.sql, v7changed), /e\.g\. "orders_v8"/);
});

Deno.test("compileFlow() in development recompiles a changed flow that has no live workers", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, orders, { environment: "development" });
  const runId = await startFlow(db.sql, orders, { orderId: 1 });
  const changed = new Flow<{ orderId: number }>({ slug: "orders" })
    .step({ slug: "load" }, (input) => ({ id: input.orderId }));

  // Its run is in flight and no worker will finish it: refused at once, nothing deleted.
  const refused = await compileFlow(db.sql, changed, { environment: "development" })
    .then(() => null, (error: unknown) => error);
  assert.ok(refused instanceof RecompileInFlightError, String(refused));
  assert.equal(refused.inFlightRuns, 1);
  assert.equal(refused.waitingSteps, 0);
  assert.equal((await getRun(db.sql, runId))?.status, "started");

  await cancelRun(db.sql, runId);
  const result = await compileFlow(db.sql, changed, { environment: "development" });
  assert.equal(result.outcome, "recompiled");
  assert.deepEqual(result.deletedRuns, { cancelled: 1 });
  assert.deepEqual(result.differences, ['step 1: "ship" is missing from the definition']);
  assert.equal(await getRun(db.sql, runId), null);
  await assert.rejects(
    compileFlow(db.sql, changed, { environment: "staging" as never }),
    /environment must be "production" or "development", got "staging"/,
  );
});

Deno.test("compileFlow() gives up when old workers do not drain in time", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, orders, { environment: "development" });
  // A live worker that never heartbeats its deprecation away.
  await db.sql`select sluice.track_worker_function('stuck')`;
  await db.sql`select sluice.register_worker(gen_random_uuid(), 'stuck', 'orders', 'orders')`;
  const changed = new Flow({ slug: "orders" }).step({ slug: "other" }, () => 1);

  await assert.rejects(
    compileFlow(db.sql, changed, {
      environment: "development",
      drainTimeoutMs: 300,
      drainPollIntervalMs: 50,
    }),
    /Cannot recompile flow "orders": 1 live worker\(s\) did not stop within 300 ms/,
  );
});

Deno.test("startFlow() starts by flow, by name and with a chosen run id; getRun() reads it back", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, orders);

  const byFlow = await startFlow(db.sql, orders, { orderId: 7 });
  const byName = await startFlow(db.sql, "orders", { anything: ["goes"] });
  const chosen = crypto.randomUUID();
  assert.equal(await startFlow(db.sql, orders, { orderId: 8 }, { runId: chosen }), chosen);
  assert.match(byFlow, /^[0-9a-f-]{36}$/);

  const run = await getRun(db.sql, byFlow);
  assert.ok(run !== null);
  assert.equal(run.runId, byFlow);
  assert.equal(run.flowSlug, "orders");
  assert.equal(run.startedVia, "orders");
  assert.equal(run.status, "started");
  assert.deepEqual(run.input, { orderId: 7 });
  assert.equal(run.output, null);
  assert.equal(run.remainingSteps, 2);
  assert.ok(run.startedAt instanceof Date);
  assert.deepEqual(
    run.steps.map((s) => [s.stepSlug, s.status, s.remainingDeps, s.initialTasks]),
    [["load", "started", 0, 1], ["ship", "created", 1, null]],
  );
  assert.ok(run.steps[0].startedAt instanceof Date);
  assert.equal(run.steps[1].startedAt, null);
  assert.deepEqual((await getRun(db.sql, byName))?.input, { anything: ["goes"] });

  assert.equal(await getRun(db.sql, crypto.randomUUID()), null);
  await assert.rejects(
    getRun(db.sql, "nope"),
    /Cannot get run: the run id must be a UUID, got "nope"/,
  );
  await assert.rejects(
    startFlow(db.sql, orders, { orderId: 1 }, { runId: "x" }),
    /Cannot start flow "orders": the run id must be a UUID/,
  );
  await assert.rejects(
    startFlow(db.sql, orders, { orderId: 1 }, { runId: chosen }),
    /already exists/,
  );
  await assert.rejects(startFlow(db.sql, "unknown", {}), /no flow or alias has that name/);
});

Deno.test("getRun() reads a waiting step with its key or due time and when it started waiting", async () => {
  await using db = await freshDatabase();
  const { worker, run: waiting } = await startWaitingRun(
    db,
    waitingFlow("get_run_waits"),
    "r1",
  );
  await using _worker = worker;
  const [ask, decision, pause] = waiting.steps;
  assert.deepEqual(
    [decision, pause].map((s) => [s.stepSlug, s.status, s.waitKey, s.startedAt, s.initialTasks]),
    [["decision", "waiting", "approval:r1", null, null], ["pause", "waiting", null, null, null]],
  );
  // Both count from when they started waiting (the same transaction's now()).
  assert.ok(decision.waitingAt instanceof Date && pause.waitingAt instanceof Date);
  assert.equal(decision.waitUntil!.getTime() - decision.waitingAt.getTime(), 3600_000);
  assert.equal(pause.waitUntil!.getTime() - pause.waitingAt.getTime(), 86400_000);
  assert.deepEqual([ask.status, ask.waitKey, ask.waitUntil, ask.waitingAt], [
    "completed",
    null,
    null,
    null,
  ]);
});

Deno.test("waitForRun() resolves with the typed output, or rejects with the run's failure", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ fail: boolean }>({ slug: "maybe", maxAttempts: 1 })
    .step({ slug: "work" }, (input) => {
      if (input.fail) throw new Error("asked to fail");
      return { ok: true };
    });
  await using _worker = await testWorker(flow, db);

  const good = await startFlow(db.sql, flow, { fail: false });
  const output = await waitForRun(db.sql, good, { timeoutMs: scaled(10_000), flow });
  const typed: { work: { ok: boolean } } = output;
  assert.deepEqual(typed, { work: { ok: true } });
  const untyped: Json = await waitForRun(db.sql, good, { timeoutMs: scaled(1000) });
  assert.deepEqual(untyped, { work: { ok: true } });
  const byTypeArgument = await waitForRun<typeof flow>(db.sql, good, { timeoutMs: scaled(1000) });
  assert.equal(byTypeArgument.work.ok, true);

  const bad = await startFlow(db.sql, flow, { fail: true });
  const error = await waitForRun(db.sql, bad, { timeoutMs: scaled(10_000) }).catch((e) => e);
  assert.ok(error instanceof RunFailedError);
  assert.equal(error.runId, bad);
  assert.equal(error.flowSlug, "maybe");
  assert.equal(error.stepSlug, "work");
  assert.match(error.errorMessage, /^step "work" task 0 failed: Error: asked to fail/);
  assert.match(error.message, new RegExp(`^Run ${bad} of flow "maybe" failed at step "work": `));
});

Deno.test("waitForRun() times out with RunTimeoutError, and rejects unknown runs and aborts", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, orders);
  const runId = await startFlow(db.sql, orders, { orderId: 1 });

  // The bound is the behaviour: read on the database's clock (the same machine's), the wait lasted
  // at least the 200 ms asked for. Tolerance 5 ms, for a timer that fires a little early.
  const [{ before }] = await db.sql<{ before: string }[]>`select clock_timestamp()::text as before`;
  const error = await waitForRun(db.sql, runId, { timeoutMs: 200 }).catch((e) => e);
  const [{ waitedMs }] = await db.sql<{ waitedMs: number }[]>`
    select extract(epoch from clock_timestamp() - ${before}::timestamptz)::float8 * 1000
      as "waitedMs"`;
  assert.ok(error instanceof RunTimeoutError);
  assert.equal(error.runId, runId);
  assert.equal(error.timeoutMs, 200);
  assert.equal(error.status, "started");
  assert.ok(waitedMs >= 195, `waitForRun gave up after ${waitedMs} ms on the database clock`);

  await assert.rejects(
    waitForRun(db.sql, crypto.randomUUID(), { timeoutMs: 100 }),
    (e: Error) => e instanceof RangeError && /no such run/.test(e.message),
  );
  const controller = new AbortController();
  const waiting = waitForRun(db.sql, runId, {
    timeoutMs: scaled(10_000),
    signal: controller.signal,
  });
  controller.abort(new Error("caller gave up"));
  await assert.rejects(waiting, /caller gave up/);
});

// Type-level checks (compiled by `deno test`, never run).
function _types(sql: ReturnType<typeof connect>) {
  // @ts-expect-error the input must match the flow's input type
  startFlow(sql, orders, { orderId: "seven" });
  // @ts-expect-error a missing input is rejected too
  startFlow(sql, orders);
  startFlow(sql, "orders", { any: "json" });
  return waitForRun(sql, "id", { timeoutMs: 1, flow: orders }).then((output) => {
    const shipped: string = output.ship;
    // @ts-expect-error only leaf steps are in the run output
    output.load;
    return shipped;
  });
}

Deno.test("getRunTasks() returns each task's attempts, status and last failed attempt's error", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ fail: boolean }>({ slug: "tasks_view", maxAttempts: 2, baseDelay: 1 })
    .step({ slug: "work" }, (input) => {
      if (input.fail) throw new Error("asked to fail");
      return 1;
    });
  await using _worker = await testWorker(flow, db);
  const bad = await startFlow(db.sql, flow, { fail: true });
  await waitForRun(db.sql, bad, { timeoutMs: scaled(15_000) }).catch(() => {});
  const [task, ...rest] = await getRunTasks(db.sql, bad);
  assert.deepEqual(rest, []);
  assert.equal(task.stepSlug, "work");
  assert.equal(task.taskIndex, 0);
  assert.equal(task.status, "failed");
  assert.equal(task.attempts, 2);
  assert.equal(task.stalledRequeues, 0);
  assert.match(task.lastError ?? "", /^Error: asked to fail/);
  assert.equal(task.queueName, "tasks_view");
  assert.ok(task.finishedAt instanceof Date && task.startedAt instanceof Date);

  assert.deepEqual(await getRunTasks(db.sql, crypto.randomUUID()), []);
  await assert.rejects(
    getRunTasks(db.sql, "nope"),
    (error) =>
      error instanceof TypeError &&
      error.message === 'Cannot get the tasks of run: the run id must be a UUID, got "nope"',
  );
});
