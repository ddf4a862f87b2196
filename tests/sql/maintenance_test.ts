import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { compileFlow, drive, read, run, startFlow } from "./_fixtures.ts";

Deno.test("delete_flow_and_data() removes the flow, its runs, private queues and registry rows", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "gone",
    queueMode: "step",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }],
  });
  await compileFlow(db.sql, { slug: "kept", steps: [{ slug: "a" }] });
  await startFlow(db.sql, "gone", {});
  await startFlow(db.sql, "kept", {});
  await db.sql`select sluice.delete_flow_and_data('gone')`;
  const [row] = await db.sql`
    select (select count(*) from sluice.flows where flow_slug = 'gone')::int as flows,
      (select count(*) from sluice.runs where flow_slug = 'gone')::int as runs,
      (select count(*) from sluice.queues where owner_flow_slug = 'gone')::int as registry,
      (select count(*) from pgmq.meta where queue_name like 'gone%')::int as queues,
      (select count(*) from sluice.aliases where flow_slug = 'gone')::int as aliases
  `;
  assert.deepEqual({ ...row }, { flows: 0, runs: 0, registry: 0, queues: 0, aliases: 0 });
  assert.equal((await read(db.sql, "kept")).length, 1, "other flows are untouched");
});

Deno.test("delete_flow_and_data() skips a private queue already dropped by hand", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "gone",
    queueMode: "step",
    steps: [{ slug: "a" }, { slug: "b", deps: ["a"] }],
  });
  // PGMQ 1.5.1's drop_queue raises for a missing queue; deleting the flow must not.
  await db.sql`select pgmq.drop_queue('gone__a')`;
  await db.sql`select sluice.delete_flow_and_data('gone')`;
  const [row] = await db.sql`
    select (select count(*) from sluice.flows)::int as flows,
      (select count(*) from sluice.queues)::int as registry,
      (select count(*) from pgmq.meta)::int as queues
  `;
  assert.deepEqual({ ...row }, { flows: 0, registry: 0, queues: 0 });
});

Deno.test("delete_flow_and_data() names an unknown flow", async () => {
  await using db = await freshDatabase();
  await assert.rejects(
    db.sql`select sluice.delete_flow_and_data('nope')`,
    /Cannot delete flow "nope": no such flow/,
  );
});

Deno.test("prune_data_older_than() removes finished runs past retention with their archived messages", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "old", steps: [{ slug: "a" }] });
  const oldRun = await startFlow(db.sql, "old", {});
  await drive(db.sql, "old", "old", () => 1);
  const newRun = await startFlow(db.sql, "old", {});
  await drive(db.sql, "old", "old", () => 2);
  const openRun = await startFlow(db.sql, "old", {});
  await db
    .sql`update sluice.runs set completed_at = now() - interval '8 days', started_at = now() - interval '8 days' where run_id = ${oldRun}`;

  const [result] = await db.sql`select sluice.prune_data_older_than(interval '7 days') as r`;
  assert.deepEqual(result.r, { runs: 1, workers: 0 });
  assert.equal(await run(db.sql, oldRun), undefined);
  assert.equal((await run(db.sql, newRun)).status, "completed");
  assert.equal((await run(db.sql, openRun)).status, "started");
  const [archived] = await db.sql`select count(*)::int as n from pgmq.a_old`;
  assert.equal(archived.n, 1, "only the pruned run's archived message is deleted");
  await assert.rejects(
    db.sql`select sluice.prune_data_older_than(interval '-1 day')`,
    /retention must be a non-negative interval/,
  );
});
