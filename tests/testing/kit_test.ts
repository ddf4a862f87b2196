import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, sendSignal, signalPayload, withStepQueues } from "../../mod.ts";
import { FlowRunTimeoutError, runFlow, startTestDatabase } from "../../src/testing/mod.ts";

// DATABASE_URL would point the kit at a real server; these tests exercise the embedded default.
Deno.env.delete("DATABASE_URL");

// One embedded database for the whole file, as a user's test file would share one: each step
// uses flows of its own, and the steps run in order.
Deno.test("testing kit, on one embedded database", async (t) => {
  await using db = await startTestDatabase();
  assert.equal(db.embedded, true);

  await t.step("a retry after a 60 s delay completes within a 10 s run timeout", async () => {
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

  await t.step("without skipped delays the same retry does not finish within 3 s", async () => {
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

  await t.step("a map step and an exhausted step, with outputs, attempts and errors", async () => {
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

  await t.step("step-queued and deployed flows get a worker for every route", async () => {
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

  await t.step("a task past its timeout on the test clock is recovered as stalled", async () => {
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
    const advancedBefore = db.clock.advancedSeconds;
    assert.equal(await db.clock.advance(3600), 0, "within its timeout nothing is stalled");
    // Past the timeout and the 30 s stall margin.
    assert.equal(await db.clock.advance(31), 1);
    const result = await pending;
    assert.equal(result.status, "completed");
    assert.equal(result.attempts("slow"), 2);
    assert.match(result.lastError("slow") ?? "", /^stalled: no report of attempt 1/);
    assert.equal(db.clock.advancedSeconds - advancedBefore, 3631);
  });

  await t.step(
    "a flow that waits: a signal given to runFlow is kept for the run, the three-day sleep is skipped, a timeout on request",
    async () => {
      const flow = refundFlow("kit_refund");
      const approved = await runFlow(db, flow, { id: "a" }, {
        timeoutMs: 10_000,
        signals: [{ key: "refund:a", payload: { approved: true }, signalId: "a" }],
      });
      assert.equal(approved.status, "completed");
      assert.deepEqual(approved.stepOutput("decision"), { approved: true });
      assert.match(approved.output?.payout ?? "", /^paid after \d{4}-\d\d-\d\dT/);
      // The sleep completed with its moved due time: now, not three days from now.
      const woke = Date.parse(approved.stepOutput("cool_off")!);
      assert.ok(
        woke < Date.now() + 3_600_000,
        `the sleep woke at ${approved.stepOutput("cool_off")}`,
      );
      assert.deepEqual(approved.tasks.map((t) => t.stepSlug).sort(), ["payout", "request"]);

      const timedOut = await runFlow(db, flow, { id: "b" }, {
        timeoutMs: 10_000,
        timeOutWaits: true,
      });
      assert.deepEqual(timedOut.stepOutput("decision"), { approved: false });
      assert.deepEqual(timedOut.output, { payout: "declined" });

      // Without a signal and without timeOutWaits, the run waits: runFlow says so by its timeout.
      await assert.rejects(
        runFlow(db, flow, { id: "c" }, { timeoutMs: 2_000 }),
        (error: unknown) => {
          assert.ok(error instanceof FlowRunTimeoutError);
          assert.equal(error.timeoutMs, 2_000);
          assert.deepEqual(error.waiting.map((w) => [w.stepSlug, w.waitKey]), [
            ["decision", "refund:c"],
          ]);
          assert.match(error.message, /step "decision" waits for a signal with key "refund:c"/);
          return true;
        },
      );
    },
  );

  await t.step(
    "the test clock releases a sleep and a wait's timeout that fall due on it",
    async () => {
      const flow = refundFlow("kit_clock");
      const pending = runFlow(db, flow, { id: "d" }, { timeoutMs: 10_000, skipSleeps: false });
      // Polled here: tests/_support.ts needs a server, and this file runs on the embedded database.
      for (let waiting = 0; waiting !== 2;) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        [{ waiting }] = await db.sql<{ waiting: number }[]>`
        select count(*)::integer as waiting from sluice.step_states
        where status = 'waiting' and flow_slug = 'kit_clock'`;
      }
      await db.clock.advance(47 * 3600);
      const [{ statuses }] = await db.sql<{ statuses: string }[]>`
      select string_agg(step_slug || ':' || status, ' ' order by step_slug) as statuses
      from sluice.step_states where flow_slug = 'kit_clock'`;
      assert.equal(statuses, "cool_off:waiting decision:waiting payout:created request:completed");
      await db.clock.advance(25 * 3600); // 72 h in all: past the 48 h timeout and the 3-day sleep
      const result = await pending;
      assert.deepEqual(result.output, { payout: "declined" });
      assert.deepEqual(result.stepOutput("decision"), { approved: false });
    },
  );

  await t.step(
    "step-queued and deployed flows with a wait get a worker for every step but the wait",
    async () => {
      const flow = withStepQueues(refundFlow("kit_refund_queued"));
      const result = await runFlow(db, flow, { id: "e" }, {
        timeoutMs: 10_000,
        signals: [{ key: "refund:e", payload: { approved: false }, signalId: "e" }],
      });
      assert.deepEqual(result.output, { payout: "declined" });
      // Behind an alias: activation needs no worker for the wait step either.
      const deployed = defineDeployedFlow(withStepQueues(refundFlow("kit_refund_v1")), {
        alias: "kit_refund",
      });
      const viaAlias = await runFlow(db, deployed, { id: "f" }, {
        timeoutMs: 10_000,
        signals: [{ key: "refund:f", payload: { approved: true }, signalId: "f" }],
      });
      assert.equal(viaAlias.run.flowSlug, "kit_refund_v1");
      assert.match(viaAlias.output?.payout ?? "", /^paid after /);
    },
  );

  await t.step(
    "a signal sent before the run approves nothing of it, unless the wait accepts earlier signals",
    async () => {
      const flow = refundFlow("kit_refund_early");
      // Sent before any run exists: a replayed approval must not approve a new refund.
      await sendSignal(db.sql, { key: "refund:g", payload: { approved: true }, signalId: "g" });
      const result = await runFlow(db, flow, { id: "g" }, {
        timeoutMs: 10_000,
        timeOutWaits: true,
      });
      assert.deepEqual(result.stepOutput("decision"), { approved: false });
      assert.deepEqual(result.output, { payout: "declined" });

      const accepting = new Flow<{ id: string }>({ slug: "kit_refund_accepting" })
        .step({ slug: "request" }, (input) => input.id)
        .waitForSignal({
          slug: "decision",
          dependsOn: ["request"],
          key: (deps) => `refund:${deps.request}`,
          payload: signalPayload<{ approved: boolean }>(),
          acceptSignalsSentBeforeRun: true,
        });
      await sendSignal(db.sql, { key: "refund:h", payload: { approved: true }, signalId: "h" });
      const accepted = await runFlow(db, accepting, { id: "h" }, { timeoutMs: 10_000 });
      assert.deepEqual(accepted.output, { decision: { approved: true } });
    },
  );
});

/** A refund that waits for a decision (48 h timeout) and a three-day sleep before the payout. */
function refundFlow(slug: string) {
  return new Flow<{ id: string }>({ slug })
    .step({ slug: "request" }, (input) => input.id)
    .waitForSignal({
      slug: "decision",
      dependsOn: ["request"],
      key: (deps) => `refund:${deps.request}`,
      payload: signalPayload<{ approved: boolean }>(),
      timeoutSeconds: 48 * 3600,
      onTimeout: { value: { approved: false } },
    })
    .sleep({ slug: "cool_off", dependsOn: ["request"] }, () => ({ seconds: 3 * 86400 }))
    .step(
      { slug: "payout", dependsOn: ["decision", "cool_off"] },
      (deps) => deps.decision.approved ? `paid after ${deps.cool_off}` : "declined",
    );
}
