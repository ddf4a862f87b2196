// The lifetime of a signal (docs/waits.md#signals, issue 43 finding 3, issue 50 finding 3): it is
// consumed by the waits it releases, a kept one expires, prune deletes expired and consumed ones,
// its payload is bounded by the output limit before anything is written, and a signal id reused
// with another key is a typed error. Signals sent before the run exist are in
// tests/testing/kit_test.ts.
import assert from "node:assert/strict";
import {
  Flow,
  LimitExceededError,
  sendSignal,
  SignalIdConflictError,
  signalPayload,
} from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { latch, testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";

/**
 * An approval flow whose "ask" step holds until `gate(id)` opens, so that a run exists while its
 * wait has not started yet.
 */
function gatedFlow(prefix: string, options: { maxOutputBytes?: number } = {}) {
  const gates = new Map<string, ReturnType<typeof latch<void>>>();
  const gate = (id: string) => {
    if (!gates.has(id)) gates.set(id, latch<void>());
    return gates.get(id)!;
  };
  const flow = new Flow<{ id: string; gated?: boolean }>({ slug: uniqueSlug(prefix), ...options })
    .step({ slug: "ask" }, async (input) => {
      if (input.gated) await gate(input.id).promise;
      return { id: input.id };
    })
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<{ approved: boolean }>(),
    })
    .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => deps.decision.approved);
  return { flow, open: (id: string) => gate(id).resolve(undefined) };
}

/** The decision step's status once it has started waiting or completed (a consumed signal). */
async function decisionOnceStarted(db: TestDatabase, runId: string): Promise<string> {
  let status = "";
  await waitUntil(async () => {
    [{ status }] = await db.sql<{ status: string }[]>`
      select status from sluice.step_states where run_id = ${runId} and step_slug = 'decision'`;
    return status === "waiting" || status === "completed";
  }, `the decision step of run ${runId} started`);
  return status;
}

async function signalRows(db: TestDatabase) {
  return [
    ...await db.sql<{ signal_id: string; consumed: boolean }[]>`
    select signal_id, consumed_at is not null as consumed from sluice.signals order by signal_id`,
  ];
}

Deno.test("a signal is consumed by the wait it releases: a later run's wait on the same key needs a new signal", async () => {
  await using db = await freshDatabase();
  const { flow } = gatedFlow("consumed");
  await using _worker = await testWorker(flow, db);
  const first = await startFlow(db.sql, flow, { id: "r1" });
  assert.equal(await decisionOnceStarted(db, first), "waiting");
  assert.deepEqual(
    await sendSignal(db.sql, { key: "approval:r1", payload: { approved: true }, signalId: "s1" }),
    { signalId: "s1", outcome: "sent", released: 1 },
  );
  assert.deepEqual(await waitForRun(db.sql, first, { timeoutMs: 10_000, flow }), { settle: true });

  // A second refund with the same id: the first approval does not approve it.
  const second = await startFlow(db.sql, flow, { id: "r1" });
  assert.equal(await decisionOnceStarted(db, second), "waiting");
  assert.deepEqual(
    await sendSignal(db.sql, { key: "approval:r1", payload: { approved: false }, signalId: "s2" }),
    { signalId: "s2", outcome: "sent", released: 1 },
  );
  assert.deepEqual(await waitForRun(db.sql, second, { timeoutMs: 10_000, flow }), {
    settle: false,
  });
  assert.deepEqual(await signalRows(db), [
    { signal_id: "s1", consumed: true },
    { signal_id: "s2", consumed: true },
  ]);
});

Deno.test("a kept signal completes the first wait that starts on its key, not a second one", async () => {
  await using db = await freshDatabase();
  const { flow, open } = gatedFlow("kept_once");
  await using _worker = await testWorker(flow, db);
  // Two runs exist before the signal, neither waits yet.
  const a = await startFlow(db.sql, flow, { id: "k", gated: true });
  const b = await startFlow(db.sql, flow, { id: "k", gated: true });
  const sent = await sendSignal(db.sql, {
    key: "approval:k",
    payload: { approved: true },
    signalId: "once",
  });
  assert.equal(sent.released, 0);
  open("k");
  const statuses = [await decisionOnceStarted(db, a), await decisionOnceStarted(db, b)].sort();
  assert.deepEqual(statuses, ["completed", "waiting"]);
  assert.deepEqual(await signalRows(db), [{ signal_id: "once", consumed: true }]);
});

Deno.test("an expired signal completes no wait; prune deletes expired and consumed signals and keeps the others", async () => {
  await using db = await freshDatabase();
  const { flow, open } = gatedFlow("expired");
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "e", gated: true });
  await sendSignal(db.sql, { key: "approval:e", payload: { approved: true }, signalId: "old" });
  const [{ lifetime }] = await db.sql<{ lifetime: string }[]>`
    select expires_at - sent_at as lifetime from sluice.signals where signal_id = 'old'`;
  assert.equal(lifetime, "7 days");
  // Its lifetime passes before the wait starts.
  await db.sql`update sluice.signals set expires_at = now() - interval '1 second'`;
  open("e");
  assert.equal(await decisionOnceStarted(db, runId), "waiting");

  // One consumed signal, one kept for another key.
  await sendSignal(db.sql, { key: "approval:e", payload: { approved: true }, signalId: "used" });
  await waitForRun(db.sql, runId, { timeoutMs: 10_000, flow });
  await sendSignal(db.sql, { key: "approval:other", payload: null, signalId: "kept" });
  assert.deepEqual((await signalRows(db)).map((row) => row.signal_id), ["kept", "old", "used"]);

  const [{ result: week }] = await db.sql<{ result: { signals: number } }[]>`
    call sluice.prune_data_older_than(interval '7 days')`;
  assert.equal(week.signals, 1);
  assert.deepEqual((await signalRows(db)).map((row) => row.signal_id), ["kept", "used"]);
  const [{ result: now }] = await db.sql<{ result: { signals: number } }[]>`
    call sluice.prune_data_older_than(interval '0 seconds')`;
  assert.equal(now.signals, 1);
  assert.deepEqual(await signalRows(db), [{ signal_id: "kept", consumed: false }]);
});

Deno.test("a payload over the output limit is refused before anything is written (SLL01), in SQL and through sendSignal", async () => {
  await using db = await freshDatabase();
  // 17 MiB of JSON built in the server: over the 16 MiB default.
  await assert.rejects(
    db.sql`select sluice.send_signal('approval:big',
      jsonb_build_object('blob', repeat('x', 17 * 1024 * 1024)), 'big')`,
    (error: { code?: string; message?: string; detail?: string }) => {
      assert.equal(error.code, "SLL01");
      assert.match(
        error.message ?? "",
        /^Cannot send signal "big": the payload is 17825804 bytes as JSON, more than the limit of 16777216 bytes \(max_output_bytes/,
      );
      assert.deepEqual(JSON.parse(error.detail ?? ""), {
        limit: "max_output_bytes",
        size: 17825804,
        max: 16777216,
      });
      return true;
    },
  );
  assert.deepEqual(await signalRows(db), []);

  // A flow with a smaller output limit waits on the key: its limit applies.
  const { flow } = gatedFlow("small_output", { maxOutputBytes: 1000 });
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "s" });
  assert.equal(await decisionOnceStarted(db, runId), "waiting");
  await assert.rejects(
    sendSignal(db.sql, { key: "approval:s", payload: { blob: "x".repeat(2000) }, signalId: "s" }),
    (error: unknown) => {
      assert.ok(error instanceof LimitExceededError);
      assert.deepEqual([error.limit, error.size, error.max], ["max_output_bytes", 2012, 1000]);
      assert.match(error.message, new RegExp(`of flow "${flow.slug}", which waits on key`));
      return true;
    },
  );
  assert.deepEqual(await signalRows(db), []);
  assert.equal(await decisionOnceStarted(db, runId), "waiting");
});

Deno.test("a signal id sent again with another key is a SignalIdConflictError (SQLSTATE SLS01 with a hint)", async () => {
  await using db = await freshDatabase();
  await sendSignal(db.sql, { key: "refund:r_42", payload: true, signalId: "decision" });
  await assert.rejects(
    sendSignal(db.sql, { key: "refund:r_43", payload: true, signalId: "decision" }),
    (error: unknown) => {
      assert.ok(error instanceof SignalIdConflictError);
      assert.equal(error.name, "SignalIdConflictError");
      assert.deepEqual([error.signalId, error.key, error.existingKey], [
        "decision",
        "refund:r_43",
        "refund:r_42",
      ]);
      assert.match(error.message, /use a new id for another key/);
      return true;
    },
  );
  await assert.rejects(
    db.sql`select sluice.send_signal('refund:r_43', 'true', 'decision')`,
    (error: { code?: string; hint?: string; detail?: string }) => {
      assert.equal(error.code, "SLS01");
      assert.match(error.hint ?? "", /^A signal id names one signal/);
      assert.deepEqual(JSON.parse(error.detail ?? ""), {
        signal_id: "decision",
        key: "refund:r_43",
        existing_key: "refund:r_42",
      });
      return true;
    },
  );
  // The same id with the same key stays a harmless duplicate.
  assert.deepEqual(
    await sendSignal(db.sql, { key: "refund:r_42", payload: false, signalId: "decision" }),
    { signalId: "decision", outcome: "duplicate", released: 0 },
  );
});
