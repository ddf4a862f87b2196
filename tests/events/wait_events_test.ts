// The events of durable waits (docs/waits.md, docs/events.md) as watchRun() delivers them, live
// and replayed: step:waiting with the wait's key and due time, then the wait's release; over
// NOTIFY, which any role may LISTEN to, without the key or a cancel's reason and role.
import assert from "node:assert/strict";
import { Flow, type RunEvent, sendSignal, signalPayload } from "../../mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { watchRun } from "../../src/client/watch_run.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { type Event, listenAs, withoutAt } from "../_run_events.ts";
import { within } from "../_support.ts";
import { testWorker, uniqueSlug, waitUntil } from "../worker/_helpers.ts";

/** Collects a watch's events as they come, with their timestamps. */
function watch(db: TestDatabase, runId: string) {
  const events: RunEvent[] = [];
  const done = (async () => {
    for await (const event of watchRun(db.sql, runId)) events.push(event);
  })();
  return { events, done };
}

/** Events without their timestamps (each must have one), to compare. */
function bare(events: readonly RunEvent[]): Event[] {
  return withoutAt(events as unknown as readonly Event[]);
}

function approvalFlow() {
  return new Flow<{ id: string }>({ slug: uniqueSlug("wait_events") })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<{ approved: boolean }>(),
      timeoutSeconds: 3600,
      onTimeout: "skip",
    })
    .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => deps.decision?.approved ?? null);
}

Deno.test("watchRun() delivers a signal wait's step:waiting with its key and timeout while it waits, then step:completed with the signal's payload", async () => {
  await using db = await freshDatabase();
  const flow = approvalFlow();
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "r1" });
  const live = watch(db, runId);
  await waitUntil(
    () => live.events.some((event) => event.type === "step:waiting"),
    "step:waiting while the step waits",
  );
  const waiting = live.events.find((event) => event.type === "step:waiting")!;
  assert.ok(waiting.type === "step:waiting");
  // The timeout counts from when the wait started: both are the same transaction's now().
  assert.equal(Date.parse(waiting.until!) - Date.parse(waiting.at), 3600_000);

  await sendSignal(db.sql, { key: "approval:r1", payload: { approved: true }, signalId: "s1" });
  await within(live.done, "the run's terminal event", 5_000);
  const expected: Event[] = [
    { type: "run:started", runId, flowSlug: flow.slug },
    { type: "step:started", runId, stepSlug: "ask", tasks: 1 },
    { type: "step:completed", runId, stepSlug: "ask", output: { id: "r1" } },
    {
      type: "step:waiting",
      runId,
      stepSlug: "decision",
      key: "approval:r1",
      until: waiting.until,
    },
    { type: "step:completed", runId, stepSlug: "decision", output: { approved: true } },
    { type: "step:started", runId, stepSlug: "settle", tasks: 1 },
    { type: "step:completed", runId, stepSlug: "settle", output: true },
    { type: "run:completed", runId, flowSlug: flow.slug, output: { settle: true } },
  ];
  assert.deepEqual(bare(live.events), expected);

  // A watch of the finished run replays the same events, the wait's step:waiting included.
  const replay = watch(db, runId);
  await within(replay.done, "the replay's terminal event", 5_000);
  assert.deepEqual(bare(replay.events), expected);
});

Deno.test("watchRun() delivers a sleep's step:waiting with its due time and no key, and a timed-out signal wait's step:skipped with reason wait_timed_out", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ id: string }>({ slug: uniqueSlug("wait_events_sleep") })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 0 }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<{ approved: boolean }>(),
      timeoutSeconds: 3600,
      onTimeout: "skip",
    })
    .step(
      { slug: "settle", dependsOn: ["pause", "decision"] },
      (deps) => deps.decision?.approved ?? "timed out",
    );
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "t1" });
  const live = watch(db, runId);
  await waitUntil(
    () => live.events.some((e) => e.type === "step:waiting" && e.stepSlug === "decision"),
    "the signal wait's step:waiting",
  );
  // The timeout passes: move it rather than wait an hour; the worker's heartbeat sweep skips it.
  await db.sql`update sluice.step_states set wait_until = now() - interval '1 second'
    where run_id = ${runId} and step_slug = 'decision'`;
  await within(live.done, "the run's terminal event", 5_000);

  const of = (slug: string) => live.events.filter((e) => "stepSlug" in e && e.stepSlug === slug);
  // A sleep already due completes in the transaction that starts it: step:waiting (until is its
  // due time, its output the same instant) then step:completed.
  const [pauseWaiting, pauseCompleted, ...pauseRest] = of("pause");
  assert.deepEqual(pauseRest, []);
  assert.ok(pauseWaiting.type === "step:waiting" && pauseCompleted.type === "step:completed");
  assert.equal(pauseWaiting.key, null);
  assert.equal(Date.parse(pauseWaiting.until!), Date.parse(pauseWaiting.at));
  assert.equal(Date.parse(pauseCompleted.output as string), Date.parse(pauseWaiting.until!));
  assert.deepEqual(bare(of("decision")).map(({ until: _until, ...rest }) => rest), [
    { type: "step:waiting", runId, stepSlug: "decision", key: "approval:t1" },
    {
      type: "step:skipped",
      runId,
      stepSlug: "decision",
      reason: "wait_timed_out",
      errorMessage: null,
    },
  ]);
  assert.deepEqual(live.events.at(-1), {
    ...live.events.at(-1),
    type: "run:completed",
    output: { settle: "timed out" },
  });
});

Deno.test("NOTIFY leaves out a wait's key, a cancel's reason and who cancelled or retried, for any role to LISTEN; watchRun() reads them back", async () => {
  await using db = await freshDatabase();
  const flow = approvalFlow();
  await using _worker = await testWorker(flow, db);
  const runId = crypto.randomUUID();
  // A role with no privilege on sluice: LISTEN needs none.
  await using listener = await listenAs(db.sql, db.url, "sluice_test_listener", runId);
  const { payloads } = listener;
  await db.sql`
      select sluice.start_flow(${flow.slug}, '{"id": "secret-id"}'::jsonb, ${runId})`;
  const live = watch(db, runId);
  await waitUntil(
    () => live.events.some((event) => event.type === "step:waiting"),
    "step:waiting while the step waits",
  );
  await cancelRun(db.sql, runId, { reason: "secret-reason" });
  await within(live.done, "the run's terminal event", 5_000);
  await waitUntil(
    () => payloads.some((p) => JSON.parse(p).type === "run:cancelled"),
    "run:cancelled over NOTIFY",
  );

  for (const payload of payloads) {
    assert.ok(!payload.includes("secret"), `NOTIFY payload ${payload} carries a secret`);
  }
  const notified = payloads.map((p) => JSON.parse(p));
  assert.deepEqual(
    notified.find((e) => e.type === "step:waiting").omitted,
    ["key"],
  );
  assert.deepEqual(
    notified.find((e) => e.type === "run:cancelled").omitted,
    ["reason", "cancelledBy"],
  );
  const waiting = live.events.find((event) => event.type === "step:waiting");
  assert.ok(waiting?.type === "step:waiting");
  assert.equal(waiting.key, "approval:secret-id");
  assert.equal("omitted" in waiting, false);
  const cancelled = live.events.at(-1)!;
  assert.ok(cancelled.type === "run:cancelled");
  assert.equal(cancelled.reason, "secret-reason");
  assert.equal(typeof cancelled.cancelledBy, "string");
});
