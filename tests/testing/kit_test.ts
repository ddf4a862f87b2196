import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, withStepQueues } from "../../mod.ts";
import { runFlow, startTestDatabase } from "../../src/testing/mod.ts";

// DATABASE_URL would point the kit at a real server; these tests exercise the embedded default.
Deno.env.delete("DATABASE_URL");

Deno.test("testing kit: a retry after a 60 s delay completes within a 10 s run timeout", async () => {
  await using db = await startTestDatabase();
  assert.equal(db.embedded, true);
  const flow = new Flow<{ n: number }>({ slug: "kit_retry", maxAttempts: 3, baseDelay: 60 })
    .step({ slug: "flaky" }, (input, ctx) => {
      if (ctx.attempt === 1) throw new Error("upstream timed out");
      return input.n * 2;
    });
  const started = performance.now();
  const result = await runFlow(db, flow, { n: 21 }, { timeoutMs: 10_000 });
  console.log(`60 s retry delay: run finished in ${Math.round(performance.now() - started)} ms`);
  assert.equal(result.status, "completed");
  assert.deepEqual(result.output, { flaky: 42 });
  assert.equal(result.attempts("flaky"), 2);
  assert.match(result.lastError("flaky") ?? "", /^Error: upstream timed out/);
});

Deno.test("testing kit: without skipped delays the same retry does not finish within 3 s", async () => {
  await using db = await startTestDatabase();
  const flow = new Flow<{ n: number }>({ slug: "kit_wait", maxAttempts: 3, baseDelay: 60 })
    .step({ slug: "flaky" }, (input, ctx) => {
      if (ctx.attempt === 1) throw new Error("upstream timed out");
      return input.n;
    });
  await assert.rejects(
    runFlow(db, flow, { n: 1 }, { timeoutMs: 3_000, skipDelays: false }),
    { name: "FlowRunTimeoutError", timeoutMs: 3_000 },
  );
});

Deno.test("testing kit: a map step and an exhausted step, with outputs, attempts and errors", async () => {
  await using db = await startTestDatabase();
  const flow = new Flow<{ items: number[] }>({ slug: "kit_map", maxAttempts: 2, baseDelay: 30 })
    .array({ slug: "items" }, (input) => input.items)
    .map({ slug: "square", array: "items" }, (item) => item * item)
    .step({ slug: "broken", dependsOn: ["square"] }, () => {
      throw new Error("always fails");
    });
  const result = await runFlow(db, flow, { items: [1, 2, 3] });
  assert.equal(result.status, "failed");
  assert.deepEqual(result.stepOutput("square"), [1, 4, 9]);
  assert.equal(result.attempts("broken"), 2);
  assert.match(result.lastError("broken") ?? "", /^Error: always fails/);
  assert.match(result.errorMessage ?? "", /always fails/);
});

Deno.test("testing kit: step-queued and deployed flows get a worker for every route", async () => {
  await using db = await startTestDatabase();
  const steps = withStepQueues(
    new Flow<{ n: number }>({ slug: "kit_steps" })
      .step({ slug: "a" }, (input) => input.n + 1)
      .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a * 10),
  );
  assert.deepEqual((await runFlow(db, steps, { n: 1 })).output, { b: 20 });
  const deployed = defineDeployedFlow(
    new Flow<{ name: string }>({ slug: "kit_greet_v1" })
      .step({ slug: "greet" }, (input) => `Hello, ${input.name}!`),
    { alias: "kit_greet" },
  );
  const result = await runFlow(db, deployed, { name: "Ada" });
  assert.deepEqual(result.output, { greet: "Hello, Ada!" });
});

Deno.test("testing kit: a task past its timeout on the test clock is recovered as stalled", async () => {
  await using db = await startTestDatabase();
  const hung = Promise.withResolvers<void>();
  const flow = new Flow<{ n: number }>({ slug: "kit_stall", maxAttempts: 2, timeout: 3600 })
    .step({ slug: "slow" }, async (input, ctx): Promise<number> => {
      if (ctx.attempt > 1) return input.n;
      hung.resolve();
      // Hangs until the worker gives up on it at stop; only the clock can move the run on.
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      return -1;
    });
  const pending = runFlow(db, flow, { n: 7 }, { timeoutMs: 20_000 });
  await hung.promise;
  assert.equal(await db.clock.advance(3600), 0, "within its timeout nothing is stalled");
  // Past the timeout and the 30 s stall margin.
  assert.equal(await db.clock.advance(31), 1);
  const result = await pending;
  assert.equal(result.status, "completed");
  assert.equal(result.attempts("slow"), 2);
  assert.match(result.lastError("slow") ?? "", /^stalled: no report of attempt 1/);
  assert.equal(db.clock.advancedSeconds, 3631);
});
