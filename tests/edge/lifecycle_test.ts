// The Edge lifecycle over real HTTP: start once per isolate, drain and respawn at the end of the
// isolate, the respawn debounce, and the disabled flag.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
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
import { scaled } from "../_support.ts";

Deno.test("the first authorized request starts one worker inside waitUntil; later requests only report", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow<{ name: string }>({ slug: "greeter" })
    .step({ slug: "greet" }, (input) => `hello ${input.name}`);
  await using handler = testHandler(flow, db, logs, { lifecycleEvents: new EventTarget() });
  await using server = serve(handler.fetch);
  assert.equal(handler.onEdge, true);
  assert.equal(handler.status.status, "idle");

  const first = await call(server.url);
  assert.equal(first.status, 200);
  assert.equal(first.body.status, "running");
  assert.equal(first.body.functionName, "greeter");
  assert.equal(first.body.queue, "greeter");
  assert.equal(first.body.isolateId, handler.isolateId);
  assert.equal(typeof first.body.workerId, "string");
  assert.equal(edge.pending.length, 1, "the worker runs inside EdgeRuntime.waitUntil");

  const second = await call(server.url, `Bearer ${SECRET}`, "GET");
  assert.equal(second.status, 200);
  assert.equal(second.body.status, "running");
  assert.equal(second.body.workerId, first.body.workerId);
  assert.equal(edge.pending.length, 1);
  assert.deepEqual(await workerCounts(db, "greeter"), { started: 1, live: 1 });

  const runId = await startFlow(db.sql, flow, { name: "edge" });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    greet: "hello edge",
  });
});

Deno.test("concurrent first requests start exactly one worker", async () => {
  await using db = await freshDatabase();
  await using _edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "burst" }).step({ slug: "a" }, () => 1);
  await using handler = testHandler(flow, db, logs, { lifecycleEvents: new EventTarget() });
  await using server = serve(handler.fetch);

  const answers = await Promise.all(Array.from({ length: 8 }, () => call(server.url)));

  const statuses = answers.map((answer) => `${answer.status} ${answer.body.status}`);
  assert.ok(statuses.includes("200 running"), statuses.join(", "));
  assert.ok(
    statuses.every((s) => s === "200 running" || s === "202 starting"),
    statuses.join(", "),
  );
  assert.deepEqual(await workerCounts(db, "burst"), { started: 1, live: 1 });
});

Deno.test("beforeunload: polling stops, one successor starts through the function URL while the in-flight task drains", async () => {
  await using db = await freshDatabase();
  await using _edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const started = latch();
  const gate = latch();
  let calls = 0;
  const flow = new Flow<{ probe?: boolean }>({ slug: "relay" }).step({ slug: "work" }, async (
    input,
  ) => {
    if (input.probe) return "probe";
    calls++;
    started.resolve();
    await gate.promise;
    return "done";
  });
  // The function URL: a second isolate of the same function, on its own port.
  await using successor = testHandler(flow, db, logs, { lifecycleEvents: new EventTarget() });
  await using functionUrl = serve(successor.fetch);
  const lifecycle = new EventTarget();
  await using predecessor = testHandler(flow, db, logs, {
    lifecycleEvents: lifecycle,
    selfUrl: functionUrl.url,
  });
  await using server = serve(predecessor.fetch);

  const first = await call(server.url);
  assert.equal(first.body.status, "running");
  const runId = await startFlow(db.sql, flow, {});
  await started.promise;

  lifecycle.dispatchEvent(new Event("beforeunload"));
  const during = await call(server.url);
  assert.equal(during.status, 503);
  assert.equal(during.body.status, "draining");
  assert.equal(during.body.reason, "beforeunload");
  // The successor does not wait for the drain: it polls while the predecessor's task still runs.
  await waitUntil(() => successor.status.status === "running", "the successor to run");
  assert.equal(predecessor.status.status, "draining");
  assert.equal(functionUrl.requests.length, 1);
  assert.equal(functionUrl.requests[0].method, "POST");
  assert.equal(functionUrl.requests[0].authorization, `Bearer ${SECRET}`);
  // A run started now can only be claimed by the successor (the predecessor polls no more): once
  // it completes, the successor has polled the queue that holds the in-flight task's message.
  const probe = await startFlow(db.sql, flow, { probe: true });
  assert.deepEqual(await waitForRun(db.sql, probe, { timeoutMs: scaled(10_000), flow }), {
    work: "probe",
  });
  const [probed] = await db.sql`
    select last_worker_id from sluice.step_tasks where run_id = ${probe}`;
  assert.equal(probed.last_worker_id, successor.status.workerId);
  assert.equal(calls, 1, "the successor never claims the task in flight in its predecessor");
  const [inFlight] = await db.sql`
    select status, attempts_count from sluice.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...inFlight }, { status: "started", attempts_count: 1 });

  gate.resolve();
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    work: "done",
  });
  await predecessor.end();

  assert.equal(functionUrl.requests.length, 1);
  const [task] = await db.sql`
    select last_worker_id, attempts_count from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.last_worker_id, first.body.workerId, "the predecessor finished its task");
  assert.equal(task.attempts_count, 1);
  const [old] = await db.sql`
    select stopped_at is not null as stopped from sluice.workers
    where worker_id = ${first.body.workerId!}`;
  assert.equal(old.stopped, true);
  assert.deepEqual(await workerCounts(db, "relay"), { started: 2, live: 1 });
  assert.notEqual(successor.status.workerId, first.body.workerId);

  const after = await call(server.url);
  assert.equal(after.status, 503);
  assert.equal(after.body.status, "stopped", "an ended isolate starts no other worker");
  assert.deepEqual(await workerCounts(db, "relay"), { started: 2, live: 1 });
});

Deno.test("an ending isolate drains within drainTimeoutMs: a task still running then is aborted and retried", async () => {
  await using db = await freshDatabase();
  await using _edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const started = latch();
  const flow = new Flow({ slug: "stubborn", maxAttempts: 2, baseDelay: 1 })
    .step({ slug: "work" }, async (_input, context) => {
      started.resolve();
      await new Promise((resolve) => {
        context.signal.addEventListener("abort", resolve, { once: true });
      });
      throw context.signal.reason;
    });
  await using functionUrl = countingServer();
  // drainTimeoutMs 3.5 s: the task gets 0.5 s (3 s are kept for reporting results), although the
  // worker's own shutdownGraceMs, used when the function is closed, is much longer.
  await using handler = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: functionUrl.url,
    drainTimeoutMs: 3_500,
    shutdownGraceMs: 60_000,
  });
  assert.equal((await handler.start()).status, "running");
  const runId = await startFlow(db.sql, flow, {});
  await started.promise;

  await handler.end();
  // Which grace ended the task is in its stored error: 500 ms, not the worker's own 60 s.
  assert.equal(functionUrl.requests.length, 1);
  const [task] = await db.sql`
    select status, attempts_count, error_message from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "queued", "the aborted attempt is retried");
  assert.equal(task.attempts_count, 1);
  assert.match(task.error_message, /shutdown grace of 500 ms expired/);
});

Deno.test("respawn chains: a successor's own end requests the next successor", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "chain" }).step({ slug: "a" }, () => 1);
  await using thirdUrl = countingServer();
  await using second = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: thirdUrl.url,
  });
  await using secondUrl = serve(second.fetch);
  await using first = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: secondUrl.url,
  });
  await using firstServer = serve(first.fetch);
  assert.equal((await call(firstServer.url)).body.status, "running");

  await first.end();
  assert.equal(second.status.status, "running");
  await second.end();
  await Promise.allSettled(edge.pending);

  assert.equal(secondUrl.requests.length, 1);
  assert.equal(thirdUrl.requests.length, 1, "the successor saw its predecessor's claim");
  assert.deepEqual(await workerCounts(db, "chain"), { started: 2, live: 0 });
});

Deno.test("on Edge, beforeunload dispatched on globalThis ends the isolate", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "global_end" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  await using handler = testHandler(flow, db, logs, { selfUrl: functionUrl.url });
  await using server = serve(handler.fetch);
  assert.equal((await call(server.url)).body.status, "running");

  globalThis.dispatchEvent(new Event("beforeunload"));
  await waitUntil(() => handler.status.status === "stopped", "the isolate to end");
  await Promise.allSettled(edge.pending);

  assert.equal(functionUrl.requests.length, 1);
  assert.deepEqual(await workerCounts(db, "global-end"), { started: 1, live: 0 });
});

Deno.test("the wall-clock budget ends the isolate before the platform does", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "budgeted" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  await using handler = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: functionUrl.url,
    wallClockBudgetMs: 500,
  });
  await using server = serve(handler.fetch);
  assert.equal((await call(server.url)).body.status, "running");

  await waitUntil(() => handler.status.status === "stopped", "the budget to end the isolate");
  await Promise.allSettled(edge.pending);

  assert.equal(handler.status.reason, "wall_clock_budget");
  assert.equal(functionUrl.requests.length, 1);
  assert.deepEqual(await workerCounts(db, "budgeted"), { started: 1, live: 0 });
});

Deno.test("a disabled function answers 503 disabled and starts nothing; an ending isolate of it requests no successor", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "switched" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  const lifecycle = new EventTarget();
  await using running = testHandler(flow, db, logs, {
    lifecycleEvents: lifecycle,
    selfUrl: functionUrl.url,
  });
  await using runningServer = serve(running.fetch);
  assert.equal((await call(runningServer.url)).body.status, "running");

  await db.sql`update sluice.worker_functions set enabled = false where function_name = 'switched'`;
  await using cold = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: functionUrl.url,
  });
  await using coldServer = serve(cold.fetch);
  const refused = await call(coldServer.url);
  assert.equal(refused.status, 503);
  assert.equal(refused.body.status, "disabled");
  assert.equal(refused.body.workerId, undefined);
  assert.deepEqual(await workerCounts(db, "switched"), { started: 1, live: 1 });

  lifecycle.dispatchEvent(new Event("beforeunload"));
  await running.end();
  await Promise.allSettled(edge.pending);

  assert.equal(functionUrl.requests.length, 0);
  assert.equal(logs.find("info", "no successor requested").length, 1);
  assert.deepEqual(await workerCounts(db, "switched"), { started: 1, live: 0 });
});

Deno.test("ten isolates ending at once request exactly one successor", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "crowd" }).step({ slug: "a" }, () => 1);
  await using functionUrl = countingServer();
  const lifecycle = new EventTarget();
  await using stack = new AsyncDisposableStack();
  const isolates = Array.from({ length: 10 }, () => {
    const handler = stack.use(testHandler(flow, db, logs, {
      lifecycleEvents: lifecycle,
      selfUrl: functionUrl.url,
      poolSize: 2,
      listen: false,
      maxPollSeconds: 1,
    }));
    return { handler, server: stack.use(serve(handler.fetch)) };
  });
  const answers = await Promise.all(isolates.map(({ server }) => call(server.url)));
  assert.deepEqual(answers.map((answer) => answer.body.status), Array(10).fill("running"));
  assert.deepEqual(await workerCounts(db, "crowd"), { started: 10, live: 10 });

  lifecycle.dispatchEvent(new Event("beforeunload"));
  await Promise.all(isolates.map(({ handler }) => handler.end()));
  await Promise.allSettled(edge.pending);

  assert.equal(functionUrl.requests.length, 1);
  assert.equal(logs.find("info", "no successor requested").length, 9);
  assert.equal(logs.records.filter((r) => r.message === "successor requested").length, 1);
  assert.deepEqual(await workerCounts(db, "crowd"), { started: 10, live: 0 });
});

Deno.test("a failed successor request is retried on 502, never after a 503", async () => {
  await using db = await freshDatabase();
  await using edge = standInEdgeRuntime();
  const logs = new LogCapture();
  const flow = new Flow({ slug: "retried" }).step({ slug: "a" }, () => 1);
  const answers = [502, 200];
  await using gateway = serve(() => Response.json({}, { status: answers.shift() ?? 500 }));
  await using refusing = serve(() => Response.json({ status: "draining" }, { status: 503 }));

  await using first = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: gateway.url,
  });
  assert.equal((await first.start()).status, "running");
  await first.end();
  assert.equal(gateway.requests.length, 2);
  assert.equal(logs.find("warn", "successor request failed: retrying").length, 1);

  await using second = testHandler(flow, db, logs, {
    lifecycleEvents: new EventTarget(),
    selfUrl: refusing.url,
  });
  assert.equal((await second.start()).status, "running");
  await second.end();
  await Promise.allSettled(edge.pending);
  assert.equal(refusing.requests.length, 1);
  assert.equal(logs.find("error", "successor request refused").length, 1);
});
