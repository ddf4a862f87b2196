// A completion whose statement is cancelled by a cancel request (57014, "canceling statement due
// to user request": a cancel meant for another statement of the same connection, e.g. a long poll
// pipelined ahead of it at shutdown) rolled back and applied nothing: the worker sends it again,
// and never turns the finished result into a failed attempt (issue 45).
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker, waitUntil } from "./_helpers.ts";

Deno.test("a completion cancelled by a cancel request is reported again, not failed", async () => {
  await using db = await freshDatabase();
  const locked = latch();
  const flow = new Flow<{ n: number }>({ slug: "cancelled_report" })
    .step({ slug: "a" }, async (input) => {
      await locked.promise;
      return input.n * 2;
    });
  await using worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { n: 21 });

  // Hold the run's lock so that the completion waits for it, then cancel the waiting statement.
  const holder = await db.sql.reserve();
  try {
    await holder`begin`;
    await holder`select 1 from sluice.runs where run_id = ${runId} for update`;
    locked.resolve();
    const pid = await waitUntil(async () => {
      const [row] = await db.sql`
        select pid from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'
          and query like '%complete_tasks%' and pid <> pg_backend_pid()`;
      return row?.pid as number | undefined;
    }, "the completion to wait for the run lock");
    await db.sql`select pg_cancel_backend(${pid})`;
    await waitUntil(
      () =>
        worker.logs.records.some((record) =>
          JSON.stringify(record.fields).includes("57014") ||
          record.message.includes("refused")
        ),
      "the worker to see the cancel",
    );
    await holder`commit`;
  } finally {
    holder.release();
  }

  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: 10_000, flow }), { a: 42 });
  const [task] = await db.sql`
    select attempts_count, error_message from sluice.step_tasks where run_id = ${runId}`;
  assert.deepEqual({ ...task }, { attempts_count: 1, error_message: null }, "no attempt failed");
  assert.deepEqual(worker.logs.find("warn", "the database refused a task result"), []);
});
