// Fatal classification through the Edge adapter: a foreign message pauses the function for good,
// across requests and cold starts, until an operator clears the pause; in a co-hosting function it
// stops every worker of the function (docs/step_queues.md, "Faults in a co-hosting function").
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { serveWorkers } from "../../src/edge/mod.ts";
import { freshDatabase } from "../_db.ts";
import {
  call,
  countingServer,
  latch,
  LogCapture,
  SECRET,
  serve,
  standInEdgeRuntime,
  testHandler,
  waitUntil,
  workerCounts,
} from "./_helpers.ts";

Deno.test("a foreign message: one fatal log without the body, no respawn, requests answer paused until the pause is cleared", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "guarded" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  await using isolate = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: functionUrl.url,
  });
  await using server = serve(isolate.fetch);
  const first = await call(server.url);
  assert.equal(first.body.status, "running");

  const [{ msg_id }] = await db.sql`
    select pgmq.send('guarded', '{"secret": "body-xyz-123"}'::jsonb)::text as msg_id`;
  await waitUntil(
    () => isolate.status.status === "paused",
    "the worker to stop on the foreign message",
  );
  await Promise.allSettled(edge.pending);

  const fatal = logs.find("fatal");
  assert.equal(fatal.length, 1, "exactly one fatal record");
  assert.match(fatal[0].message, new RegExp(`message ${msg_id} \\(missing\\)`));
  assert.ok(!logs.text().includes("body-xyz-123"), "message bodies are never logged");
  const [worker] = await db.sql`
    select stopped_at is not null as stopped from sluice.workers
    where worker_id = ${first.body.workerId!}`;
  assert.equal(worker.stopped, true);
  const [message] = await db.sql`
    select vt <= clock_timestamp() as visible from pgmq.q_guarded where msg_id = ${msg_id}`;
  assert.equal(message.visible, true, "the batch is visible again");
  assert.equal(functionUrl.requests.length, 0, "no successor after a fatal stop");

  const again = await call(server.url);
  assert.equal(again.status, 503);
  assert.equal(again.body.status, "paused");
  assert.match(again.body.reason!, new RegExp(`message ${msg_id} \\(missing\\)`));
  assert.ok(!again.body.reason!.includes("body-xyz-123"));
  assert.equal(typeof again.body.pausedAt, "string");

  await using cold = testHandler(flow, db, logs, { lifecycleEvents: new EventTarget() });
  await using coldServer = serve(cold.fetch);
  const coldAnswer = await call(coldServer.url);
  assert.equal(coldAnswer.status, 503);
  assert.equal(coldAnswer.body.status, "paused", "a cold start answers paused too");
  assert.deepEqual(await workerCounts(db, "guarded"), { started: 1, live: 0 });

  // The operator removes the foreign message and lifts the pause.
  await db.sql`select pgmq.archive('guarded', ${msg_id}::bigint)`;
  const [{ cleared }] = await db.sql`select sluice.clear_restart_pause('guarded') as cleared`;
  assert.equal(cleared, true);

  const restarted = await call(server.url);
  assert.equal(restarted.status, 200);
  assert.equal(restarted.body.status, "running");
  assert.notEqual(restarted.body.workerId, first.body.workerId);
  assert.deepEqual(await workerCounts(db, "guarded"), { started: 2, live: 1 });
  assert.equal(logs.find("fatal").length, 1);
  assert.equal(functionUrl.requests.length, 0);
});

Deno.test("an isolate ending after its worker stopped fatally requests no successor", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "guarded_end" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  const lifecycle = new EventTarget();
  await using isolate = testHandler(flow, db, logs, {
    lifecycleEvents: lifecycle,
    selfUrl: functionUrl.url,
  });
  await using server = serve(isolate.fetch);
  assert.equal((await call(server.url)).body.status, "running");
  await db.sql`select pgmq.send('guarded_end', '{}'::jsonb)`;
  await waitUntil(() => isolate.status.status === "paused", "the fatal stop");

  lifecycle.dispatchEvent(new Event("beforeunload"));
  await isolate.end();
  await Promise.allSettled(edge.pending);

  assert.equal(functionUrl.requests.length, 0);
  assert.equal(isolate.status.status, "stopped");
});

Deno.test("co-hosted: a foreign message on one step's queue stops every worker of the function; a neighbour's task in flight drains and is reported, nothing restarts", async () => {
  await using db = await freshDatabase();
  const logs = new LogCapture();
  const gate = latch();
  const running = latch();
  const FUNCTION = "office-guarded";
  const flow = withStepQueues(
    new Flow<{ n: number }>({ slug: "guarded_office" })
      .step({ slug: "slow" }, async (input) => {
        running.resolve();
        await gate.promise;
        return input.n;
      })
      .step({ slug: "mail" }, () => "sent")
      .step({ slug: "audit", dependsOn: ["slow", "mail"] }, (deps) => deps.slow),
    { functions: { slow: FUNCTION, mail: FUNCTION, audit: FUNCTION } },
  );
  await using served = serveWorkers([flow], {
    functionName: FUNCTION,
    connectionString: db.url,
    secret: SECRET,
    env: {},
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    handleSignals: false,
    heartbeatIntervalMs: 100,
    pollIntervalMs: 100,
    logLevel: "debug",
    logger: logs.sink,
  });
  const url = new URL(`http://127.0.0.1:${served.addr.port}/`);
  const first = await call(url);
  assert.equal(first.body.status, "running", JSON.stringify(first.body));

  const runId = await startFlow(db.sql, flow, { n: 7 });
  await running.promise;
  const [{ msg_id }] = await db.sql`
    select pgmq.send('guarded_office__mail', '{"secret": "body-xyz-123"}'::jsonb)::text as msg_id`;
  // The mail worker stops on it; its neighbours stop polling too, the slow one still draining.
  await waitUntil(
    () => logs.find("info", "worker stopping").length === 3,
    "every worker of the function to begin stopping",
  );
  const stopping = logs.find("warn", "a co-hosted worker stopped fatal");
  assert.equal(stopping.length, 1);
  assert.equal(stopping[0].fields.step_slug, "mail");
  assert.equal((stopping[0].fields.stopping_worker_ids as string[]).length, 2);
  gate.resolve();
  await waitUntil(
    () => logs.find("info", "worker stopped").length === 3,
    "every worker of the function to stop",
  );

  const [slow] = await db.sql`
    select status, output from sluice.step_tasks where run_id = ${runId} and step_slug = 'slow'`;
  assert.deepEqual(
    { ...slow },
    { status: "completed", output: 7 },
    "the drained result was written",
  );
  const [{ live }] = await db.sql`
    select count(*) filter (where stopped_at is null)::int as live from sluice.workers
    where function_name = ${FUNCTION}`;
  assert.equal(live, 0);
  const fatal = logs.find("fatal");
  assert.equal(fatal.length, 1);
  assert.match(fatal[0].message, new RegExp(`message ${msg_id} \\(missing\\)`));
  assert.ok(!logs.text().includes("body-xyz-123"), "message bodies are never logged");

  const again = await call(url);
  assert.equal(again.status, 503);
  assert.equal(again.body.status, "paused");
  assert.match(again.body.reason!, new RegExp(`message ${msg_id} \\(missing\\)`));
  const [{ started }] = await db.sql`
    select count(*)::int as started from sluice.workers where function_name = ${FUNCTION}`;
  assert.equal(started, 3, "nothing restarted");
});
