// A development recompile deletes every run of the flow, so it never runs over a run in flight:
// a worker of a changed shape refuses at once while a run waits on a signal (naming it), leaves
// the run and its old worker as they were, and recompiles once the run is cancelled, saying
// what it deleted.
import assert from "node:assert/strict";
import { Flow, RecompileInFlightError, signalPayload } from "../../mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { getRun } from "../../src/client/get_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "./_helpers.ts";

function approvals(extra: boolean) {
  const flow = new Flow<{ id: string }>({ slug: "approvals" })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<boolean>(),
      timeoutSeconds: 3600,
    });
  return extra ? flow.step({ slug: "notify", dependsOn: ["decision"] }, () => "sent") : flow;
}

Deno.test("a development recompile refuses while a run waits on a signal, names it, and deletes nothing", async () => {
  await using db = await freshDatabase();
  const v1 = approvals(false);
  await using old = await testWorker(v1, db, { environment: "development" });
  const runId = await startFlow(db.sql, v1, { id: "42" });
  await waitUntil(
    async () => (await getRun(db.sql, runId))?.steps.some((s) => s.status === "waiting"),
    "the signal wait to wait",
  );

  const refused = await testWorker(approvals(true), db, { environment: "development" })
    .then(() => null, (e: unknown) => e);
  assert.ok(refused instanceof RecompileInFlightError, String(refused));
  assert.equal(refused.flowSlug, "approvals");
  assert.equal(refused.inFlightRuns, 1);
  assert.equal(refused.waitingSteps, 1);
  assert.deepEqual(refused.waiting.map((w) => ({ ...w, waitUntil: typeof w.waitUntil })), [
    { runId, stepSlug: "decision", waitKey: "approval:42", waitUntil: "string" },
  ]);
  assert.match(
    refused.message,
    new RegExp(`run ${runId} step "decision" waiting for signal "approval:42"`),
  );
  assert.match(refused.message, /sluice flows reset approvals --force/);

  // Nothing changed: the run waits on, its old worker is not deprecated.
  assert.equal((await getRun(db.sql, runId))?.status, "started");
  const [w] = await db
    .sql`select deprecated_at from sluice.workers where worker_id = ${old.workerId}`;
  assert.equal(w.deprecated_at, null);
  assert.equal(old.status, "running");

  // Cancelled, the run is no longer in flight: the recompile goes ahead and says what it deleted.
  await cancelRun(db.sql, runId, { reason: "reshaping" });
  const recompiling = testWorker(approvals(true), db, { environment: "development" });
  await old.done;
  await using current = await recompiling;
  const started = current.logs.find("info", "worker started")[0]?.fields;
  assert.equal(started?.compile_outcome, "recompiled");
  assert.deepEqual(started?.deleted_runs, { cancelled: 1 });
});
