// How `ops run` shows durable waits (docs/waits.md): a waiting step is `waiting`, counted from when
// it started waiting, with a line naming its signal key or its due time.
import assert from "node:assert/strict";
import { Flow, sendSignal, signalPayload } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, uniqueSlug, waitUntil } from "../worker/_helpers.ts";
import { startWaitingRun, waitingFlow } from "../worker/_waiting_run.ts";
import { ops, opsDone } from "./_ops.ts";

/** The time as `ops run` prints it. */
const shown = (at: Date | null) => at!.toISOString().replace(/\.\d{3}Z$/, "Z");

Deno.test("ops run shows a waiting step as waiting, since it started waiting, with its signal key and timeout or its due time", async () => {
  await using db = await freshDatabase();
  // A key is any text: the view quotes it.
  const flow = waitingFlow("cli_waits", (id) => `approval "${id}"`);
  const { worker, runId, run } = await startWaitingRun(db, flow, "r1");
  await using _worker = worker;
  const [, decision, pause] = run.steps;

  const view = await opsDone(db, "run", runId);
  assert.equal(view.code, 0, view.err);
  const rows = view.out.split("\n").filter((line) => /^└ (decision|pause) /.test(line));
  assert.equal(rows.length, 2, view.out);
  for (const [row, step] of [[rows[0], decision], [rows[1], pause]] as const) {
    assert.match(
      row,
      new RegExp(`${step.stepSlug}\\s+waiting\\s+-\\s+0\\s+${shown(step.waitingAt)}`),
    );
  }
  assert.ok(
    view.out.includes(
      `decision waiting for signal "approval \\"r1\\"" (times out ${shown(decision.waitUntil)})`,
    ),
    view.out,
  );
  assert.ok(view.out.includes(`pause waiting until ${shown(pause.waitUntil)}`), view.out);

  // --json carries the wait as getRun() reads it.
  const json = JSON.parse((await opsDone(db, "run", runId, "--json")).out);
  const byStep = Object.fromEntries(
    json.steps.map((s: Record<string, unknown>) => [s.stepSlug, s]),
  );
  assert.deepEqual(
    [byStep.decision.waitKey, byStep.decision.waitUntil, byStep.pause.waitKey],
    ['approval "r1"', decision.waitUntil!.toISOString(), null],
  );
});

Deno.test("ops run --watch shows the wait, and the signal that releases it", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ id: string }>({ slug: uniqueSlug("cli_waits_watch") })
    .step({ slug: "ask" }, (input) => ({ id: input.id }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `approval:${deps.ask.id}`,
      payload: signalPayload<boolean>(),
    });
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { id: "w1" });
  const { code, output } = ops(db, ["run", runId, "--watch"]);
  await waitUntil(
    () => output.text.includes(`decision waiting for signal "approval:w1" (no timeout)`),
    "a view of the waiting step",
  );
  await sendSignal(db.sql, { key: "approval:w1", payload: true, signalId: "w1" });
  assert.equal(await code, 0, output.errors);
  const last = output.text.slice(output.text.lastIndexOf(`Run ${runId}`));
  assert.match(last, /: completed\n/);
  assert.match(last, /└ decision\s+completed\s+-\s+0\s+\S+Z\s+\d/);
  assert.ok(!last.includes("waiting"), last);
});
