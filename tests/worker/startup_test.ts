// Startup: option checks before any I/O, compilation first, production mismatches and
// development recompilation.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { FlowShapeMismatchError, RecompileInFlightError } from "../../src/deploy/errors.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import postgres from "../../src/db/driver/postgres.ts";
import { startWorker } from "../../src/worker/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { latch, silentDatabase, testWorker } from "./_helpers.ts";
import { scaled } from "../_support.ts";

async function counts(db: TestDatabase) {
  const [row] = await db.sql`
    select (select count(*)::int from sluice.flows) as flows,
      (select count(*)::int from sluice.worker_functions) as functions,
      (select count(*)::int from sluice.workers) as workers`;
  return { ...row };
}

Deno.test("startWorker rejects stepSlug for a plain flow before touching the database", async () => {
  const flow = new Flow({ slug: "plain" }).step({ slug: "a" }, () => 1);
  // The connection string leads to a port that counts connections: the refusal opens none.
  using database = silentDatabase();

  await assert.rejects(
    // @ts-expect-error stepSlug is not an option of a plain-flow worker
    startWorker(flow, { connectionString: database.url, stepSlug: "a" }),
    (error: Error) => {
      assert.ok(error instanceof TypeError);
      assert.match(error.message, /stepSlug "a" is only for step-queued flows/);
      assert.match(error.message, /polls queue "plain" and runs every step/);
      assert.match(error.message, /withStepQueues\(flow\)/);
      return true;
    },
  );
  assert.equal(database.accepted(), 0, "the worker connected to its database");
});

Deno.test("startWorker checks its options before touching the database", async () => {
  const flow = new Flow({ slug: "opts" }).step({ slug: "a" }, () => 1);
  // The client and the connection string lead to a port that counts connections.
  using database = silentDatabase();
  const silent = postgres(database.url, { max: 1 });

  await assert.rejects(
    startWorker(flow, { env: {} }),
    /give sql \(a postgres\.js client\) or connectionString/,
  );
  await assert.rejects(
    startWorker(flow, { sql: silent, connectionString: database.url }),
    /either sql or connectionString, not both/,
  );
  await assert.rejects(
    startWorker(flow, { sql: silent, maxConcurrent: 0 }),
    (error: Error) =>
      error instanceof RangeError &&
      /maxConcurrent must be an integer >= 1, got 0/.test(error.message),
  );
  await assert.rejects(
    startWorker(flow, { sql: silent, logLevel: "loud" as never }),
    /logLevel must be "debug", "info", "warn" or "error", got "loud"/,
  );
  assert.equal(database.accepted(), 0, "the worker connected to its database");
  await silent.end({ timeout: 0 });
});

Deno.test("a failed compilation leaves no worker function and no worker row", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('taken')`;
  const flow = new Flow({ slug: "taken" }).step({ slug: "a" }, () => 1);

  await assert.rejects(
    startWorker(flow, { connectionString: db.url, logger: () => {} }),
    /queue "taken" of step "a" already exists in PGMQ/,
  );
  assert.deepEqual(await counts(db), { flows: 0, functions: 0, workers: 0 });
});

Deno.test("in production a changed shape fails startup with FlowShapeMismatchError and changes nothing", async () => {
  await using db = await freshDatabase();
  const v1 = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
  const first = await testWorker(v1, db);
  await first.stop();

  const v2 = new Flow({ slug: "orders" })
    .step({ slug: "fetch" }, () => 1)
    .step({ slug: "ship", dependsOn: ["fetch"] }, () => 2);
  const error = await startWorker(v2, { connectionString: db.url, logger: () => {} }).catch((e) =>
    e
  );

  assert.ok(error instanceof FlowShapeMismatchError, String(error));
  assert.equal(error.flowSlug, "orders");
  assert.deepEqual(error.differences, ['step 1: "ship" is new in the definition']);
  assert.match(error.message, /new concrete slug \(e\.g\. "orders_v2"\)/);
  assert.deepEqual(await counts(db), { flows: 1, functions: 1, workers: 1 });
  const [{ steps }] = await db.sql`select count(*)::int as steps from sluice.steps`;
  assert.equal(steps, 1);
});

Deno.test("in development a changed shape waits for the run in flight on the old worker, drains it, then recompiles", async () => {
  await using db = await freshDatabase();
  const started = latch();
  const release = latch();
  const v1 = new Flow({ slug: "dev_flow" }).step({ slug: "a" }, async () => {
    started.resolve();
    await release.promise;
    return "old";
  });
  const old = await testWorker(v1, db, { environment: "development" });
  const oldRun = await startFlow(db.sql, v1, {});
  await started.promise;

  const v2 = new Flow({ slug: "dev_flow" })
    .step({ slug: "a" }, () => "new")
    .step({ slug: "b", dependsOn: ["a"] }, (deps) => `${deps.a}!`);
  // The run is in flight: asked once (no time to wait), the recompile refuses and the old worker
  // keeps serving it, undeprecated.
  await assert.rejects(
    compileFlow(db.sql, v2, { environment: "development", drainTimeoutMs: 0 }),
    RecompileInFlightError,
  );
  const [w] = await db.sql`
    select deprecated_at from sluice.workers where worker_id = ${old.workerId}`;
  assert.equal(w.deprecated_at, null, "not deprecated while its run is in flight");
  // A worker of the new shape waits for the run to finish, then for the old worker to drain.
  const starting = testWorker(v2, db, { environment: "development" });
  release.resolve();
  await old.done;
  await using current = await starting;

  assert.equal(old.status, "stopped");
  assert.equal(
    current.logs.find("info", "worker started")[0]?.fields.compile_outcome,
    "recompiled",
  );
  const [{ runs }] = await db.sql`
    select count(*)::int as runs from sluice.runs where run_id = ${oldRun}`;
  assert.equal(runs, 0, "recompilation replaces the flow and its finished runs");
  assert.deepEqual(
    current.logs.find("info", "worker started")[0]?.fields.deleted_runs,
    { completed: 1 },
  );
  const runId = await startFlow(db.sql, v2, {});
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow: v2 }), {
    b: "new!",
  });
});
