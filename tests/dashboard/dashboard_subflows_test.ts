// How the dashboard's run page shows subflows (docs/subflows.md): a parent lists its child runs
// (linked, with their status), a waiting subflow step says it waits for them, and a child links
// back to its parent.
import assert from "node:assert/strict";
import { Flow, sendSignal } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, uniqueSlug, waitUntil } from "../worker/_helpers.ts";
import { dashboard } from "./_browser.ts";

Deno.test("dashboard run page links a parent's subflow children and a child's parent", async () => {
  await using db = await freshDatabase();
  const gate = new Flow<{ id: string }>({ slug: uniqueSlug("gate") })
    .step({ slug: "start" }, (input) => input)
    .waitForSignal({ slug: "open", dependsOn: ["start"], key: (deps) => `dash:${deps.start.id}` });
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
  await sendSignal(db.sql, { key: "dash:a", payload: true, signalId: "a" });
  await waitUntil(async () => {
    const [row] = await db.sql<{ status: string }[]>`
      select status from sluice.runs where run_id = ${kids[0].run_id}`;
    return row.status === "completed";
  }, "the first child completed");

  await using server = dashboard(db);
  const get = async (path: string) => {
    const response = await fetch(`${server.root}/${path}`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    assert.equal(response.status, 200);
    return await response.text();
  };
  const html = await get(`runs/${runId}`);
  const children = /<td id="run-children">[\s\S]*?<\/td>/.exec(html)?.[0] ?? "";
  assert.ok(
    children.includes(
      `<div data-child="gates/0">gates[0] <a href="runs/${kids[0].run_id}">${
        kids[0].run_id
      }</a> (flow ${gate.slug}) <span class="badge s-completed">completed</span></div>`,
    ),
    children,
  );
  assert.ok(
    children.includes(`<a href="runs/${kids[1].run_id}">`) &&
      children.includes(`<span class="badge s-started">started</span>`),
    children,
  );
  const row = /<tr data-step="gates">[\s\S]*?<\/tr>/.exec(html)![0];
  assert.ok(row.includes(`<span class="wait">its subflow children</span>`), row);

  const child = await get(`runs/${kids[1].run_id}`);
  assert.ok(
    child.includes(
      `<td id="run-parent"><a href="runs/${runId}">${runId}</a> (flow ${parent.slug}, started), ` +
        `subflow step gates[1]</td>`,
    ),
    child,
  );
  assert.ok(!child.includes(`id="run-children"`));
});
