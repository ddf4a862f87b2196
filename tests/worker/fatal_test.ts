// Fatal classification: a message the worker must not touch stops it for good.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker } from "./_helpers.ts";

Deno.test("a foreign message on the queue: one fatal log without the body, the worker stops, restarts pause", async () => {
  await using db = await freshDatabase();
  let calls = 0;
  const flow = new Flow({ slug: "guarded" }).step({ slug: "a" }, () => {
    calls++;
    return 1;
  });
  const worker = await testWorker(flow, db);
  const [{ msg_id }] = await db.sql`
    select pgmq.send('guarded', '{"secret": "body-xyz-123"}'::jsonb) as msg_id`;

  await worker.done;

  assert.equal(worker.status, "fatal");
  const fatal = worker.logs.find("fatal");
  assert.equal(fatal.length, 1);
  assert.match(fatal[0].message, new RegExp(`queue "guarded": message ${msg_id} \\(missing\\)`));
  assert.match(fatal[0].message, new RegExp(worker.workerId));
  assert.deepEqual(fatal[0].fields.fatal, [{ message_id: msg_id, class: "missing" }]);
  assert.deepEqual(fatal[0].fields.message_ids, [msg_id]);
  assert.equal(fatal[0].fields.queue, "guarded");
  assert.equal(fatal[0].fields.worker_id, worker.workerId);
  assert.ok(!worker.logs.text().includes("body-xyz-123"), "message bodies are never logged");

  const [fn] = await db.sql`
    select restart_paused_at is not null as paused, pause_reason
    from sluice.worker_functions where function_name = 'guarded'`;
  assert.equal(fn.paused, true);
  assert.match(fn.pause_reason, new RegExp(`message ${msg_id} \\(missing\\)`));
  const [w] = await db.sql`
    select stopped_at is not null as stopped from sluice.workers where worker_id = ${worker.workerId}`;
  assert.equal(w.stopped, true);
  const [message] = await db.sql`
    select vt <= clock_timestamp() as visible from pgmq.q_guarded where msg_id = ${msg_id}`;
  assert.equal(message.visible, true, "the message is left visible for an operator");

  // Stopped for good: new work is not picked up. `done` settled, so no loop of the worker is left
  // to poll later (the op sanitizer fails the test on any timer or query of it still pending): the
  // state now is the state for good.
  const runId = await startFlow(db.sql, flow, {});
  assert.equal(worker.status, "fatal");
  const [task] = await db.sql`
    select t.status, t.attempts_count, q.read_ct from sluice.step_tasks t
    join pgmq.q_guarded q on q.msg_id = t.message_id where t.run_id = ${runId}`;
  assert.deepEqual({ ...task }, { status: "queued", attempts_count: 0, read_ct: 0 });
  assert.equal(calls, 0);
});
