// How `ops run` shows subflows (docs/subflows.md): a parent lists its child runs by step and
// index, a waiting subflow step counts its children as its tasks, and a child names its parent.
import assert from "node:assert/strict";
import { Flow, sendSignal } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { latch, testWorker, uniqueSlug, waitUntil } from "../worker/_helpers.ts";
import { ops, opsDone } from "./_ops.ts";
import { scaled } from "../_support.ts";

Deno.test("ops run shows a parent's subflow children and a child's parent, in text and --json", async () => {
  await using db = await freshDatabase();
  const gate = new Flow<{ id: string }>({ slug: uniqueSlug("gate") })
    .step({ slug: "start" }, (input) => input)
    .waitForSignal({ slug: "open", dependsOn: ["start"], key: (deps) => `gate:${deps.start.id}` });
  const parent = new Flow<{ ids: string[] }>({ slug: uniqueSlug("fan") })
    .step({ slug: "load" }, (input) => input.ids.map((id) => ({ id })))
    .mapSubflow({ slug: "gates", dependsOn: ["load"], flow: gate, input: (deps) => deps.load });
  await using _g = await testWorker(gate, db);
  await using _p = await testWorker(parent, db);
  const runId = await startFlow(db.sql, parent, { ids: ["a", "b"] });
  const kids = await waitUntil(async () => {
    const rows = await db.sql<{ run_id: string; status: string }[]>`
      select r.run_id, ss.status from sluice.runs r
      join sluice.step_states ss on ss.run_id = r.run_id and ss.step_slug = 'open'
      where r.parent_run_id = ${runId} order by r.parent_task_index`;
    return rows.length === 2 && rows.every((r) => r.status === "waiting") ? rows : null;
  }, "both children waiting");
  await sendSignal(db.sql, { key: "gate:a", payload: true, signalId: "a" });

  const view = await opsDone(db, "run", runId);
  assert.equal(view.code, 0, view.err);
  assert.match(view.out, /└ gates\s+waiting\s+1\/2\s+0\s/);
  assert.ok(view.out.includes("gates waiting for its subflow children"), view.out);
  assert.ok(
    view.out.includes(`  gates[0] run ${kids[0].run_id} (flow ${gate.slug}): completed`),
    view.out,
  );
  assert.ok(
    view.out.includes(`  gates[1] run ${kids[1].run_id} (flow ${gate.slug}): started`),
    view.out,
  );

  const child = await opsDone(db, "run", kids[1].run_id);
  assert.ok(
    child.out.includes(
      `child of run ${runId} (flow ${parent.slug}, started), subflow step gates[1]`,
    ),
    child.out,
  );
  const json = JSON.parse((await opsDone(db, "run", kids[1].run_id, "--json")).out);
  assert.deepEqual(json.parent, {
    runId,
    flowSlug: parent.slug,
    status: "started",
    stepSlug: "gates",
    taskIndex: 1,
  });
  assert.deepEqual(json.children, []);
  const parentJson = JSON.parse((await opsDone(db, "run", runId, "--json")).out);
  assert.deepEqual(parentJson.children.map((c: { runId: string }) => c.runId), [
    kids[0].run_id,
    kids[1].run_id,
  ]);
  assert.equal(parentJson.parent, null);

  await sendSignal(db.sql, { key: "gate:b", payload: true, signalId: "b" });
  await waitForRun(db.sql, runId, { timeoutMs: scaled(20_000), flow: parent });
  const done = await opsDone(db, "run", runId);
  assert.match(done.out, /└ gates\s+completed\s+2\/2\s/);
});

Deno.test("ops run --watch of a parent follows its children's start and end (child:* events): each child's line and the step's count move before the step completes", async () => {
  await using db = await freshDatabase();
  const gate = new Flow<{ id: string }>({ slug: uniqueSlug("wgate") })
    .step({ slug: "start" }, (input) => input)
    .waitForSignal({ slug: "open", dependsOn: ["start"], key: (deps) => `wgate:${deps.start.id}` });
  // The load step waits for the watch's first view: the children come in by child:started.
  const loaded = latch();
  const parent = new Flow<{ ids: string[] }>({ slug: uniqueSlug("wfan") })
    .step({ slug: "load" }, async (input) => {
      await loaded.promise;
      return input.ids.map((id) => ({ id }));
    })
    .mapSubflow({ slug: "gates", dependsOn: ["load"], flow: gate, input: (deps) => deps.load });
  await using _g = await testWorker(gate, db);
  await using _p = await testWorker(parent, db);
  const runId = await startFlow(db.sql, parent, { ids: ["a", "b"] });
  const { code, output } = ops(db, ["run", runId, "--watch"]);
  await waitUntil(() => /^Run /m.test(output.text), "the first view");
  assert.ok(!output.text.includes("gates[0]"), output.text);
  loaded.resolve();
  const kids = await waitUntil(async () => {
    const rows = await db.sql<{ run_id: string; status: string }[]>`
      select r.run_id, ss.status from sluice.runs r
      join sluice.step_states ss on ss.run_id = r.run_id and ss.step_slug = 'open'
      where r.parent_run_id = ${runId} order by r.parent_task_index`;
    return rows.length === 2 && rows.every((r) => r.status === "waiting") ? rows : null;
  }, "both children waiting");
  await waitUntil(
    () => output.text.includes(`  gates[1] run ${kids[1].run_id} (flow ${gate.slug}): started`),
    "the children's lines in the watch",
  );
  await sendSignal(db.sql, { key: "wgate:a", payload: true, signalId: "wa" });
  // Child 0's end moves the view while the step still waits: one of two children done.
  await waitUntil(
    () =>
      output.text.split(/\n(?=Run )/).some((view) =>
        /└ gates\s+waiting\s+1\/2\s/.test(view) &&
        view.includes(`  gates[0] run ${kids[0].run_id} (flow ${gate.slug}): completed`) &&
        view.includes(`  gates[1] run ${kids[1].run_id} (flow ${gate.slug}): started`)
      ),
    "a view with child 0 completed and child 1 started",
  );
  await sendSignal(db.sql, { key: "wgate:b", payload: true, signalId: "wb" });
  assert.equal(await code, 0, output.errors);
  const last = output.text.split(/\n(?=Run )/).at(-1)!;
  assert.match(last, /└ gates\s+completed\s+2\/2\s/);
  assert.ok(
    last.includes(`  gates[1] run ${kids[1].run_id} (flow ${gate.slug}): completed`),
    last,
  );
});
