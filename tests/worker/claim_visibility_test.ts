// A worker reads with the claim visibility of the tasks it claimed last, so that the claim keeps
// the visibility its read set instead of writing every message row a second time (issue 31).
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker } from "./_helpers.ts";
import { scaled } from "../_support.ts";

Deno.test("after its first claim a worker's reads leave the claim nothing to write on the message", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "claim_vis", timeout: 60 })
    .step({ slug: "a" }, () => 1)
    .step({ slug: "b", dependsOn: ["a"] }, () => 2)
    .step({ slug: "c", dependsOn: ["b"] }, () => 3);
  await using worker = await testWorker(flow, db);
  // Every write to a message row, counted by a trigger: the read's and any the claim adds.
  await db.sql.unsafe(`
    create table public.message_writes (vt_seconds integer not null);
    create function public.count_message_write() returns trigger language plpgsql as $$
    begin
      insert into public.message_writes
      values (round(extract(epoch from new.vt - clock_timestamp())));
      return new;
    end $$;
    create trigger count_writes before update on pgmq.q_${worker.queueName}
      for each row execute function public.count_message_write();
  `);
  for (let i = 0; i < 3; i++) {
    const runId = await startFlow(db.sql, flow, {});
    await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
  }
  const writes = (await db.sql<{ vt_seconds: number }[]>`
    select vt_seconds from public.message_writes`).map((w) => w.vt_seconds);
  // 9 tasks: 9 reads, and one claim write for the first, read with visibilityTimeout (30 s, shorter than
  // the claim's 62 s).
  assert.equal(writes.length, 10, `message writes: ${writes.join(", ")}`);
  assert.equal(writes.filter((s) => s >= 61 && s <= 62).length, 9, "timeout 60 + 2 s");
});
