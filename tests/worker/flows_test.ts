// End to end with a real worker: linear flows, maps, conditions.
import assert from "node:assert/strict";
import { Flow } from "../../src/dsl/flow.ts";
import { getRun } from "../../src/client/get_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker } from "./_helpers.ts";
import { scaled } from "../_support.ts";

Deno.test("a worker runs a linear 3-step flow to completion", async () => {
  await using db = await freshDatabase();
  const seen: string[] = [];
  const flow = new Flow<{ n: number }>({ slug: "linear" })
    .step({ slug: "add" }, (input, ctx) => {
      seen.push(`${ctx.stepSlug}:${ctx.attempt}:${ctx.taskIndex}`);
      return input.n + 1;
    })
    .step({ slug: "double", dependsOn: ["add"] }, (deps) => deps.add * 2)
    .step({ slug: "label", dependsOn: ["double"] }, (deps, ctx) => ({
      text: `result ${deps.double}`,
      flowInput: ctx.flowInput.n,
      runId: ctx.runId,
    }));
  await using worker = await testWorker(flow, db);

  const runId = await startFlow(db.sql, flow, { n: 4 });
  const output = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });

  assert.deepEqual(output, { label: { text: "result 10", flowInput: 4, runId } });
  assert.deepEqual(seen, ["add:1:0"]);
  const run = await getRun(db.sql, runId);
  assert.deepEqual(run?.steps.map((s) => [s.stepSlug, s.status, s.output]), [
    ["add", "completed", 5],
    ["double", "completed", 10],
    ["label", "completed", { text: "result 10", flowInput: 4, runId }],
  ]);
  assert.equal(worker.status, "running");
  assert.equal(worker.queueName, "linear");
  assert.ok(!worker.logs.text().includes("result 10"), "outputs are never logged");
});

Deno.test("a worker runs map steps, one task per element, outputs in element order", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ words: string[] }>({ slug: "words" })
    .array({ slug: "split" }, (input) => input.words)
    .map({ slug: "upper", array: "split" }, async (word, ctx) => {
      // Later elements finish first, forced: each task waits until the one after it returned.
      // The output keeps element order anyway.
      await returned[ctx.taskIndex + 1]?.promise;
      finished.push(ctx.taskIndex);
      returned[ctx.taskIndex].resolve();
      return { word: word.toUpperCase(), index: ctx.taskIndex };
    })
    .step({ slug: "count", dependsOn: ["upper"] }, (deps) => deps.upper.length);
  const returned = [latch(), latch(), latch()];
  const finished: number[] = [];
  await using _worker = await testWorker(flow, db, { maxConcurrent: 3 });

  const runId = await startFlow(db.sql, flow, { words: ["a", "b", "c"] });
  const output = await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow });
  assert.deepEqual(output, { count: 3 });
  assert.deepEqual(finished, [2, 1, 0]);
  const run = await getRun(db.sql, runId);
  assert.deepEqual(run?.steps.find((s) => s.stepSlug === "upper")?.output, [
    { word: "A", index: 0 },
    { word: "B", index: 1 },
    { word: "C", index: 2 },
  ]);
});

Deno.test("a map over an empty array completes with [] and the run completes", async () => {
  await using db = await freshDatabase();
  let mapCalls = 0;
  const flow = new Flow<number[]>({ slug: "empty_map" })
    .map({ slug: "square" }, (n) => {
      mapCalls++;
      return n * n;
    })
    .step({ slug: "total", dependsOn: ["square"] }, (deps) => ({
      sum: deps.square.reduce((a, b) => a + b, 0),
      squares: deps.square,
    }));
  await using _worker = await testWorker(flow, db);

  const empty = await startFlow(db.sql, flow, []);
  assert.deepEqual(await waitForRun(db.sql, empty, { timeoutMs: scaled(10_000), flow }), {
    total: { sum: 0, squares: [] },
  });
  assert.equal(mapCalls, 0);

  const full = await startFlow(db.sql, flow, [1, 2, 3]);
  assert.deepEqual(await waitForRun(db.sql, full, { timeoutMs: scaled(10_000), flow }), {
    total: { sum: 14, squares: [1, 4, 9] },
  });
  assert.equal(mapCalls, 3);
});

Deno.test("a skipped step is absent from its dependents' input and from the run output", async () => {
  await using db = await freshDatabase();
  const inputs: unknown[] = [];
  const flow = new Flow<{ vip: boolean; amount: number }>({ slug: "conditions" })
    .step({ slug: "base" }, (input) => input.amount)
    .step({ slug: "bonus", if: { vip: true } }, (input) => input.amount / 10)
    .step({ slug: "total", dependsOn: ["base", "bonus"] }, (deps) => {
      inputs.push(deps);
      return deps.base + (deps.bonus ?? 0);
    });
  await using _worker = await testWorker(flow, db);

  const vip = await startFlow(db.sql, flow, { vip: true, amount: 100 });
  assert.deepEqual(await waitForRun(db.sql, vip, { timeoutMs: scaled(10_000), flow }), {
    total: 110,
  });

  const regular = await startFlow(db.sql, flow, { vip: false, amount: 100 });
  assert.deepEqual(await waitForRun(db.sql, regular, { timeoutMs: scaled(10_000), flow }), {
    total: 100,
  });
  assert.deepEqual(inputs, [{ base: 100, bonus: 10 }, { base: 100 }]);
  const run = await getRun(db.sql, regular);
  const bonus = run?.steps.find((s) => s.stepSlug === "bonus");
  assert.equal(bonus?.status, "skipped");
  assert.equal(bonus?.skipReason, "condition_unmet");
});

Deno.test("a skipped leaf is absent from the run output", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ notify: boolean }>({ slug: "leaf_skip" })
    .step({ slug: "work" }, () => "done")
    .step({ slug: "notify", dependsOn: ["work"], ifNot: { work: "done" } }, () => "sent");
  await using _worker = await testWorker(flow, db);

  const runId = await startFlow(db.sql, flow, { notify: false });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {});
});

Deno.test("outputs and errors with quotes, backslashes and unicode are stored exactly", async () => {
  await using db = await freshDatabase();
  const nasty = `it's a "test" \\ with $$ dollars $tag$, E'\\x41', ünïcödé 🚀 and \n newlines`;
  const flow = new Flow<{ text: string }>({ slug: "escaping", maxAttempts: 2, baseDelay: 1 })
    .step({ slug: "echo" }, (input, ctx) => {
      if (ctx.attempt === 1) throw new Error(input.text);
      return { text: input.text, [input.text]: 1 };
    });
  await using _worker = await testWorker(flow, db, { pollIntervalMs: 50 });

  const runId = await startFlow(db.sql, flow, { text: nasty });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    echo: { text: nasty, [nasty]: 1 },
  });
  const [task] = await db.sql`select error_message from sluice.step_tasks`;
  assert.ok(task.error_message.startsWith(`Error: ${nasty}\n`), task.error_message);
});
