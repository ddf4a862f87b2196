// The claim stamps started_at with its own time: in the long-poll mode (listen: false) the claim
// runs in a statement that began with the poll, before the task it claims was even queued.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

Deno.test("a task claimed inside a long poll is stamped started no earlier than it was queued", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "clock" }).step({ slug: "a" }, () => "ok");
  await using _worker = await testWorker(flow, db, { listen: false, maxPollSeconds: 5 });
  for (let i = 0; i < 3; i++) {
    // Start the run while the worker's read_with_poll statement is under way (this database's
    // worker only: other test files long-poll in their own databases on the same server).
    await waitUntil(async () => {
      const [row] = await db.sql`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and state = 'active'
          and query like '%sluice.read_messages_with_poll%'
          and query not like '%pg_stat_activity%'`;
      return row.n > 0;
    }, "the worker to be inside a long poll");
    const runId = await startFlow(db.sql, flow, {});
    await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
  }
  const rows = await db.sql`
    select queued_at, started_at from sluice.step_tasks where started_at < queued_at`;
  assert.deepEqual([...rows], [], "no task started before it was queued");
});
