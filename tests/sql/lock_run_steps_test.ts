// sluice.lock_run_steps: the run -> step state rungs of the lock ladder that complete_tasks,
// fail_task and requeue_stalled_tasks share.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { latch, waitUntil } from "../_support.ts";
import { compileFlow, drive, type Sql, startFlow } from "./_fixtures.ts";

function lockRunSteps(sql: Sql, runIds: string[], steps: string[], skipLocked: boolean) {
  return sql`
    select run_id, step_slug, status
    from sluice.lock_run_steps(${runIds}::uuid[], ${steps}::text[], ${skipLocked})
  `;
}

Deno.test("lock_run_steps() returns each named step state of a started run once, in (run, slug) order", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "ladder", steps: [{ slug: "a" }, { slug: "b" }] });
  const finished = await startFlow(db.sql, "ladder", {});
  await drive(db.sql, "ladder", "ladder", () => 1);
  const [{ status }] = await db.sql`select status from sluice.runs where run_id = ${finished}`;
  assert.equal(status, "completed");
  const [one, two] = [await startFlow(db.sql, "ladder", {}), await startFlow(db.sql, "ladder", {})];

  const rows = await lockRunSteps(
    db.sql,
    [two, one, two, finished, one],
    ["b", "b", "a", "a", "b"],
    false,
  );
  // uuids order as their lowercase hex text does
  const expected = [[one, "b"], [two, "a"], [two, "b"]].sort((x, y) =>
    x[0] === y[0] ? x[1].localeCompare(y[1]) : x[0] < y[0] ? -1 : 1
  );
  assert.deepEqual(rows.map((r) => [r.run_id, r.step_slug]), expected);
  assert.ok(rows.every((r) => r.status === "started"));
});

Deno.test("lock_run_steps() waits for a run another transaction holds, or skips it when told to", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "held", steps: [{ slug: "a" }] });
  const held = await startFlow(db.sql, "held", {});
  const free = await startFlow(db.sql, "held", {});

  const holder = db.connect(1);
  const waiter = db.connect(1);
  const locked = latch();
  const released = latch();
  const holding = holder.begin(async (tx) => {
    await tx`select 1 from sluice.runs where run_id = ${held} for update`;
    locked.resolve();
    await released.promise;
  });
  await locked.promise;
  try {
    const skipped = await lockRunSteps(db.sql, [held, free], ["a", "a"], true);
    assert.deepEqual(skipped.map((r) => r.run_id), [free], "the held run is skipped");

    const [{ pid }] = await waiter`select pg_backend_pid() as pid`;
    const waiting = lockRunSteps(waiter, [held, free], ["a", "a"], false).execute();
    await waitUntil(async () => {
      const [{ blocked }] = await db.sql`
        select wait_event_type = 'Lock' as blocked from pg_stat_activity where pid = ${pid}
      `;
      return blocked;
    }, "lock_run_steps to wait for the held run");
    released.resolve();
    await holding;
    assert.deepEqual((await waiting).map((r) => r.run_id).sort(), [held, free].sort());
  } finally {
    released.resolve();
    await holding;
  }
});
