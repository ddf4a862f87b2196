import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { compileFlow, drive, liveMessages, run, startFlow, stepStatuses } from "./_fixtures.ts";

Deno.test("a root step whose if-pattern is unmet is skipped and its dependent runs without that key", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "cond",
    steps: [
      { slug: "premium", if: { tier: "gold" } },
      { slug: "basic" },
      { slug: "report", deps: ["basic", "premium"] },
    ],
  });
  const runId = await startFlow(db.sql, "cond", { tier: "silver" });
  const inputs: Record<string, unknown> = {};
  await drive(db.sql, "cond", "cond", (task) => {
    inputs[task.step_slug] = task.input;
    return task.step_slug;
  });
  assert.deepEqual(inputs.report, { basic: "basic" });
  assert.deepEqual(await stepStatuses(db.sql, runId), {
    premium: "skipped",
    basic: "completed",
    report: "completed",
  });
  const [state] = await db
    .sql`select skip_reason from sluice.step_states where run_id = ${runId} and step_slug = 'premium'`;
  assert.equal(state.skip_reason, "condition_unmet");
  assert.equal((await run(db.sql, runId)).status, "completed");
});

Deno.test("a dependent step's condition tests the object of its dependencies' outputs", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "depcond",
    steps: [
      { slug: "check" },
      { slug: "notify", deps: ["check"], ifNot: { check: { ok: true } } },
    ],
  });
  const okRun = await startFlow(db.sql, "depcond", {});
  await drive(db.sql, "depcond", "depcond", () => ({ ok: true }));
  assert.equal((await stepStatuses(db.sql, okRun)).notify, "skipped");
  const badRun = await startFlow(db.sql, "depcond", {});
  await drive(db.sql, "depcond", "depcond", (t) => t.step_slug === "check" ? { ok: false } : 1);
  assert.equal((await stepStatuses(db.sql, badRun)).notify, "completed");
});

Deno.test("skip-cascade skips every transitive dependent and the run completes", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "cascade",
    steps: [
      { slug: "gate", if: { go: true }, whenUnmet: "skip-cascade" },
      { slug: "other" },
      { slug: "mid", deps: ["gate"] },
      { slug: "tail", deps: ["mid", "other"] },
    ],
  });
  const runId = await startFlow(db.sql, "cascade", { go: false });
  await drive(db.sql, "cascade", "cascade", () => 1);
  assert.deepEqual(await stepStatuses(db.sql, runId), {
    gate: "skipped",
    other: "completed",
    mid: "skipped",
    tail: "skipped",
  });
  const row = await run(db.sql, runId);
  assert.equal(row.status, "completed");
  assert.deepEqual(row.output, {}, "skipped leaves are absent from the run output");
});

Deno.test("whenUnmet 'fail' fails the run, cancelling its other tasks and archiving their messages", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "strict",
    steps: [{ slug: "other" }, { slug: "must", if: { ok: true }, whenUnmet: "fail" }],
  });
  const runId = await startFlow(db.sql, "strict", { ok: false });
  const row = await run(db.sql, runId);
  assert.equal(row.status, "failed");
  assert.match(row.error_message, /condition of step "must" is unmet/);
  assert.deepEqual(await stepStatuses(db.sql, runId), { other: "cancelled", must: "failed" });
  const [task] = await db.sql`select status from sluice.step_tasks where run_id = ${runId}`;
  assert.equal(task.status, "cancelled");
  assert.equal(await liveMessages(db.sql, runId), 0);
});

Deno.test("a map over a skipped step is skipped with its dependents", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "mapskip",
    steps: [
      { slug: "list", if: { go: true } },
      { slug: "each", type: "map", deps: ["list"], mapSource: "list" },
      { slug: "after", deps: ["each"] },
      { slug: "side" },
    ],
  });
  const runId = await startFlow(db.sql, "mapskip", { go: false });
  await drive(db.sql, "mapskip", "mapskip", () => "ok");
  assert.deepEqual(await stepStatuses(db.sql, runId), {
    list: "skipped",
    each: "skipped",
    after: "skipped",
    side: "completed",
  });
  const [state] = await db
    .sql`select skip_reason from sluice.step_states where run_id = ${runId} and step_slug = 'each'`;
  assert.equal(state.skip_reason, "dependency_skipped");
  assert.deepEqual((await run(db.sql, runId)).output, { side: "ok" });
});
