// `ops run cancel`, `ops run retry` and `ops runs cancel`, and how `ops runs` and `ops run` show
// cancelled and retried runs.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, uniqueSlug, waitUntil } from "../worker/_helpers.ts";
import { ops, opsDone } from "./_ops.ts";
import { scaled } from "../_support.ts";

Deno.test("ops run cancel and run retry: a cancelled run is listed with its reason, a retried one with its retries", async () => {
  await using db = await freshDatabase();
  let hold = true;
  const slug = uniqueSlug("cli_control");
  const flow = new Flow<{ n: number }>({ slug, timeout: 60 })
    .step({ slug: "work" }, async (input, ctx) => {
      while (hold) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return input.n;
    });
  const worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { n: 3 });
  await waitUntil(async () => {
    const [task] = await db.sql`select status from sluice.step_tasks where run_id = ${runId}`;
    return task?.status === "started";
  }, "the task to start");

  const noReason = await opsDone(db, "run", "cancel", runId);
  assert.equal(noReason.code, 2);
  assert.match(noReason.err, /give --reason/);
  const cancelled = await opsDone(db, "run", "cancel", runId, "--reason", "wrong input");
  assert.deepEqual([cancelled.code, cancelled.out], [
    0,
    `Cancelled run ${runId} (1 task stopped): wrong input`,
  ]);
  const again = await opsDone(db, "run", "cancel", runId, "--reason", "again");
  assert.deepEqual([again.code, again.out], [
    0,
    `Run ${runId} had already been cancelled; nothing changed.`,
  ]);
  const list = await opsDone(db, "runs", "--status", "cancelled");
  assert.match(
    list.out,
    new RegExp(`^${runId} +${slug} +cancelled +0/1 +0 .* cancelled: wrong input$`, "m"),
  );
  const [{ me }] = await db.sql`select current_user as me`;
  const shown = await opsDone(db, "run", runId);
  assert.match(shown.out, new RegExp(`^Run ${runId} of flow ${slug}: cancelled$`, "m"));
  assert.match(shown.out, new RegExp(`^cancelled by ${me}: wrong input$`, "m"));
  const json = JSON.parse((await opsDone(db, "run", runId, "--json")).out);
  assert.deepEqual([json.status, json.cancelReason, json.retryCount], [
    "cancelled",
    "wrong input",
    0,
  ]);

  hold = false;
  const retried = await opsDone(db, "run", "retry", runId);
  assert.equal(retried.code, 0, retried.err);
  assert.equal(
    retried.out,
    `Retried run ${runId} (retry 1): 1 task queued again, 1 step resumed; status started.`,
  );
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(15_000), flow }), {
    work: 3,
  });
  const after = await opsDone(db, "runs", "--flow", slug);
  assert.match(after.out, new RegExp(`^${runId} +${slug} +completed +1/1 +1 `, "m"));
  const detail = await opsDone(db, "run", runId);
  assert.match(detail.out, new RegExp(`^retried 1 time, last by ${me} at `, "m"));
  const done = await opsDone(db, "run", "retry", runId, "--json");
  assert.equal(JSON.parse(done.out)[0].outcome, "unchanged");
  const unknown = crypto.randomUUID();
  const missing = await opsDone(db, "run", "retry", unknown);
  assert.equal(missing.code, 1);
  assert.match(missing.err, new RegExp(`Cannot retry run ${unknown}: no such run`));

  // Without a live worker the retry is refused, naming the step; --force queues it anyway.
  hold = true;
  const second = await startFlow(db.sql, flow, { n: 4 });
  await waitUntil(async () => {
    const [task] = await db.sql`select status from sluice.step_tasks where run_id = ${second}`;
    return task?.status === "started";
  }, "the second task to start");
  assert.equal((await opsDone(db, "run", "cancel", second, "--reason", "x")).code, 0);
  await worker.stop();
  const refused = await opsDone(db, "run", "retry", second);
  assert.equal(refused.code, 1);
  assert.match(refused.err, /no live worker of that flow serves step work .*pass --force/);
  const forced = await opsDone(db, "run", "retry", second, "--force");
  assert.equal(forced.code, 0, forced.err);
  const [{ status }] = await db.sql`select status from sluice.runs where run_id = ${second}`;
  assert.equal(status, "started");
});

Deno.test("ops runs cancel cancels every started run of a flow, batch by batch", async () => {
  await using db = await freshDatabase();
  const slug = uniqueSlug("cli_bulk");
  const flow = new Flow<{ n: number }>({ slug }).step({ slug: "s" }, (input) => input.n);
  // Compiled, never served: every run stays queued.
  await (await testWorker(flow, db)).stop();
  const ids = [];
  for (let n = 0; n < 5; n++) ids.push(await startFlow(db.sql, flow, { n }));

  const usage = await opsDone(db, "runs", "cancel", "--flow", slug);
  assert.equal(usage.code, 2);
  const bad = await opsDone(
    db,
    "runs",
    "cancel",
    "--flow",
    slug,
    "--reason",
    "r",
    "--batch-size",
    "0",
  );
  assert.equal(bad.code, 2);
  const result = await opsDone(
    db,
    "runs",
    "cancel",
    "--flow",
    slug,
    "--reason",
    "bad deploy",
    "--batch-size",
    "2",
  );
  assert.deepEqual([result.code, result.out], [0, `Cancelled 5 runs of flow ${slug}.`]);
  const rows = await db.sql`
    select status, cancel_reason from sluice.runs where run_id = any(${ids})`;
  assert.deepEqual(
    rows.map((r) => [r.status, r.cancel_reason]),
    ids.map(() => ["cancelled", "bad deploy"]),
  );
  const none = await opsDone(db, "runs", "cancel", "--flow", slug, "--reason", "again", "--json");
  assert.deepEqual(JSON.parse(none.out), []);
});

Deno.test("ops run --watch of a running run ends when it is cancelled: exit 1, the last view says who cancelled it and why", async () => {
  await using db = await freshDatabase();
  const slug = uniqueSlug("cli_watch");
  const flow = new Flow<{ n: number }>({ slug, timeout: 60 })
    .step({ slug: "wait" }, async (_input, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      throw ctx.signal.reason;
    });
  await using _worker = await testWorker(flow, db);
  const runId = await startFlow(db.sql, flow, { n: 1 });
  const { code, output } = ops(db, ["run", runId, "--watch"]);
  await waitUntil(() => output.text.includes(`Run ${runId} of flow ${slug}: started`), "a view");
  assert.equal((await opsDone(db, "run", "cancel", runId, "--reason", "watched")).code, 0);
  assert.equal(await code, 1);
  assert.match(
    output.text,
    new RegExp(`Run ${runId} of flow ${slug}: cancelled\\n.*\\ncancelled by .*: watched`),
  );
});
