// Handler timeouts: the signal aborts and the attempt fails, whether or not the handler listens.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { RunFailedError } from "../../src/client/errors.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker } from "./_helpers.ts";
import { scaled } from "../_support.ts";

Deno.test("a handler past its timeout sees its signal abort and the attempt fails", async () => {
  await using db = await freshDatabase();
  const reasons: string[] = [];
  const flow = new Flow({ slug: "slow", maxAttempts: 1, timeout: 1 })
    .step({ slug: "wait" }, (_input, ctx) =>
      new Promise<string>((_resolve, reject) => {
        ctx.signal.addEventListener("abort", () => {
          reasons.push(`${ctx.signal.reason.name}: ${ctx.signal.reason.message}`);
          reject(ctx.signal.reason);
        });
      }));
  await using worker = await testWorker(flow, db);

  const runId = await startFlow(db.sql, flow, {});
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000) }).catch((e) => e);

  assert.deepEqual(reasons, ["TimeoutError: Task timed out after 1s"]);
  assert.ok(error instanceof RunFailedError);
  assert.match(error.errorMessage, /timed out after 1s/);
  assert.equal(worker.logs.find("warn", "task attempt failed")[0]?.fields.reason, "timeout");
});

Deno.test("a handler that ignores its signal still fails at the timeout", async () => {
  await using db = await freshDatabase();
  let aborted = false;
  const flow = new Flow({ slug: "stuck", maxAttempts: 2, baseDelay: 1, timeout: 1 })
    .step({ slug: "wait" }, (_input, ctx) => {
      ctx.signal.addEventListener("abort", () => aborted = true);
      if (ctx.attempt === 2) return "second attempt";
      return new Promise<string>(() => {}); // never settles
    });
  await using _worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  const runId = await startFlow(db.sql, flow, {});
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    wait: "second attempt",
  });
  assert.equal(aborted, true);
  const [task] = await db.sql`select attempts_count, error_message from sluice.step_tasks`;
  assert.equal(task.attempts_count, 2);
  assert.match(task.error_message, /timed out after 1s/);
});
