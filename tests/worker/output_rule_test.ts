// Handler outputs follow the JSON rule of run inputs and stay under maxOutputBytes: an output that
// breaks either fails its attempt with a message naming the path, and is never stored.
import assert from "node:assert/strict";
import { RunFailedError } from "../../src/client/errors.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker } from "./_helpers.ts";
import { scaled } from "../_support.ts";

async function storedOutputs(db: TestDatabase, runId: string) {
  return await db.sql`
    select step_slug, status, output, error_message from sluice.step_tasks
    where run_id = ${runId} order by step_slug`;
}

Deno.test("an output holding NaN or \\u0000 fails its attempt naming the path, instead of storing null", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "nan_out", maxAttempts: 1 })
    .step({ slug: "score" }, () => ({ stats: { mean: Number.NaN } }));
  const strings = new Flow({ slug: "nul_out", maxAttempts: 1 })
    .step({ slug: "text" }, () => ({ lines: ["ok", "a\u0000b"] }));
  await using _worker = await testWorker(flow, db);
  await using _strings = await testWorker(strings, db);

  for (
    const [target, message] of [
      [flow, "output.stats.mean: NaN is not JSON"],
      [strings, "output.lines[1]: the string holds \\u0000, which Postgres cannot store in jsonb"],
    ] as const
  ) {
    const runId = await startFlow(db.sql, target, {});
    const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000) }).catch((e) => e);
    assert.ok(error instanceof RunFailedError, String(error));
    const expected = `JsonValueError: Cannot store the output of step "${
      target.steps[0].slug
    }": ${message}`;
    assert.equal(error.errorMessage, `step "${target.steps[0].slug}" task 0 failed: ${expected}`);
    const [task] = await storedOutputs(db, runId);
    assert.equal(task.status, "failed");
    assert.equal(task.output, null);
    assert.equal(task.error_message, expected);
  }
});

Deno.test("an output above maxOutputBytes fails its attempt with the sizes, and is never stored", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "big_out", maxAttempts: 1 })
    .step({ slug: "small" }, () => "x".repeat(98))
    .step({ slug: "large", dependsOn: ["small"] }, (deps) => `${deps.small}x`);
  await using _worker = await testWorker(flow, db, { maxOutputBytes: 100 });

  const runId = await startFlow(db.sql, flow, {});
  const error = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000) }).catch((e) => e);
  assert.ok(error instanceof RunFailedError, String(error));
  const expected = 'JsonSizeError: Cannot store the output of step "large": output is 101 bytes ' +
    "as JSON, more than the limit of 100 bytes";
  assert.equal(error.errorMessage, `step "large" task 0 failed: ${expected}`);
  const [large, small] = await storedOutputs(db, runId);
  assert.equal(large.error_message, expected);
  assert.deepEqual([small.status, small.output], ["completed", "x".repeat(98)]);
  assert.deepEqual([large.status, large.output], ["failed", null]);
});

Deno.test("maxOutputBytes must be a positive integer", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: "bad_limit" }).step({ slug: "a" }, () => 1);
  await assert.rejects(
    () => testWorker(flow, db, { maxOutputBytes: 0 }),
    /Cannot start worker for flow "bad_limit": maxOutputBytes must be an integer >= 1, got 0/,
  );
});
