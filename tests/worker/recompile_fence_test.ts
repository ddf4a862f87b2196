// A development recompile fences a worker of the old definition that was frozen past its heartbeat
// TTL (SIGSTOP): on resume its report is stale, its claim is refused, it stops with one error
// naming the flow, and no restart pause is set; the new shape's tasks run on a new worker.
import assert from "node:assert/strict";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { shapeB } from "./_recompile_fence_flow.ts";
import { testWorker, waitUntil } from "./_helpers.ts";
import { spawnWorkerProcess } from "./_worker_process.ts";
import { scaled } from "../_support.ts";

Deno.test("a development recompile fences a frozen worker of the old shape: report stale, claim refused, stops without a restart pause", async () => {
  await using db = await freshDatabase();
  const gate = await Deno.makeTempFile();
  await Deno.remove(gate);
  await using worker = spawnWorkerProcess(
    new URL("./_recompile_fence_worker.ts", import.meta.url),
    [db.url, gate],
  );
  const { child, nextLine } = worker;

  let oldRun: string;
  let newRun: string;
  let oldWorker: string;
  try {
    assert.equal(await nextLine(), "READY");
    oldRun = await startFlow(db.sql, "refenced", {});
    assert.equal(await nextLine(), `STARTED ${oldRun} work`);
    [{ worker_id: oldWorker }] = await db.sql`select worker_id from sluice.workers`;

    // Frozen past the heartbeat TTL (a debugger breakpoint): not live, so not waited for.
    child.kill("SIGSTOP");
    await db.sql`update sluice.workers set last_heartbeat_at = now() - interval '1 minute'`;
    // A recompile never deletes a run in flight: cancel it first.
    await cancelRun(db.sql, oldRun);
    assert.equal(
      (await compileFlow(db.sql, shapeB(), { environment: "development" })).outcome,
      "recompiled",
    );
    newRun = await startFlow(db.sql, "refenced", {});

    child.kill("SIGCONT");
    await Deno.writeTextFile(gate, "");
    assert.equal(await nextLine(), "DONE stopped");
  } finally {
    await worker[Symbol.asyncDispose]();
    await Deno.remove(gate).catch(() => {});
  }

  const records = (await worker.stderr).split("\n").filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line));
  const errors = records.filter((r) => r.level === "error" || r.level === "fatal");
  assert.equal(errors.length, 1, JSON.stringify(records));
  assert.match(errors[0].message, /^Cannot serve flow "refenced": it was recompiled after worker /);
  assert.equal(
    records.filter((r) => r.level === "warn" && r.message.includes("stale report")).length,
    1,
    JSON.stringify(records),
  );

  // Nothing of the new run changed, and the function's restarts are not paused.
  const tasks = await db.sql`
    select step_slug, status, attempts_count from sluice.step_tasks where run_id = ${newRun}
    order by step_slug`;
  assert.deepEqual(tasks.map((t) => ({ ...t })), [
    { step_slug: "work", status: "queued", attempts_count: 0 },
  ]);
  const [fn] = await db.sql`select restart_paused_at from sluice.worker_functions`;
  assert.equal(fn.restart_paused_at, null);
  const [stopped] = await db.sql`
    select stopped_at is not null as stopped from sluice.workers where worker_id = ${oldWorker}`;
  assert.equal(stopped.stopped, true);

  const flow = shapeB();
  await using fresh = await testWorker(flow, db);
  assert.deepEqual(await waitForRun(db.sql, newRun, { timeoutMs: scaled(10_000), flow }), {
    extra: "B+extra",
  });
  await waitUntil(
    async () => (await db.sql`select 1 from sluice.runs where run_id = ${oldRun}`).length === 0,
    "the old run to be gone with the old definition",
  );
  assert.notEqual(fresh.workerId, oldWorker);
});
