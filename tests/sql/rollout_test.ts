import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { compileFlow, readAndClaim, registerWorker, startFlow } from "./_fixtures.ts";

Deno.test("set_worker_functions_enabled returns previous values and a restore puts back exactly those", async () => {
  await using db = await freshDatabase();
  const { sql } = db;
  await sql`select sluice.track_worker_function('on')`;
  await sql`select sluice.track_worker_function('off')`;
  await sql`update sluice.worker_functions set enabled = false where function_name = 'off'`;

  const disabled = await sql`
    select * from sluice.set_worker_functions_enabled('{"on": false, "off": false, "new": false}')
  `;
  assert.deepEqual(disabled.map((row) => ({ ...row })), [
    { function_name: "new", was_tracked: false, previous_enabled: true, enabled: false },
    { function_name: "off", was_tracked: true, previous_enabled: false, enabled: false },
    { function_name: "on", was_tracked: true, previous_enabled: true, enabled: false },
  ]);
  const record = Object.fromEntries(
    disabled.map((row) => [row.function_name, row.previous_enabled]),
  );
  await sql`select * from sluice.set_worker_functions_enabled(${sql.json(record)})`;
  const rows = await sql`
    select function_name, enabled from sluice.worker_functions order by function_name collate "C"
  `;
  assert.deepEqual(rows.map((row) => [row.function_name, row.enabled]), [
    ["new", true],
    ["off", false],
    ["on", true],
  ]);
});

Deno.test("set_worker_functions_enabled rejects a value that is not a boolean and writes nothing", async () => {
  await using db = await freshDatabase();
  await assert.rejects(
    db.sql`select * from sluice.set_worker_functions_enabled('{"a": false, "b": "no"}')`,
    /Cannot set enabled of worker function "b": expected a non-empty name and true or false, got "no"/,
  );
  assert.deepEqual([...await db.sql`select function_name from sluice.worker_functions`], []);
});

Deno.test("deprecate_function_workers deprecates the workers that have not stopped, rejects unknown names", async () => {
  await using db = await freshDatabase();
  const { sql } = db;
  await sql`select sluice.track_worker_function('f')`;
  const [a, b, c] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
  for (const id of [a, b, c]) await sql`select sluice.register_worker(${id}, 'f', 'q', 'x')`;
  await sql`select sluice.stop_worker(${c})`;
  await assert.rejects(
    sql`select sluice.deprecate_function_workers(array['f', 'nope'])`,
    /Cannot deprecate the workers of worker function "nope": no such worker function/,
  );
  const [{ count }] = await sql`select sluice.deprecate_function_workers(array['f']) as count`;
  assert.equal(count, 2);
  const [{ again }] = await sql`select sluice.deprecate_function_workers(array['f']) as again`;
  assert.equal(again, 0);
  const [{ heartbeat }] = await sql`select sluice.heartbeat_worker(${a}) as heartbeat`;
  assert.deepEqual(heartbeat, { deprecated: true });
});

Deno.test("prune_worker_functions keeps recent, disabled and paused functions", async () => {
  await using db = await freshDatabase();
  const { sql } = db;
  for (const name of ["old", "old_disabled", "old_paused", "recent", "old_with_worker"]) {
    await sql`select sluice.track_worker_function(${name})`;
  }
  await sql`select sluice.register_worker(${crypto.randomUUID()}, 'old_with_worker', 'q', 'x')`;
  await sql`update sluice.worker_functions set enabled = false where function_name = 'old_disabled'`;
  await sql`
    update sluice.worker_functions set restart_paused_at = now(), pause_reason = 'x'
    where function_name = 'old_paused'
  `;
  await sql`
    update sluice.worker_functions set updated_at = now() - interval '2 days'
    where function_name like 'old%'
  `;
  const stopped = crypto.randomUUID();
  await sql`select sluice.register_worker(${stopped}, 'old', 'q', 'x')`;
  await sql`
    update sluice.workers set stopped_at = now() - interval '2 days',
      last_heartbeat_at = now() - interval '2 days'
    where worker_id = ${stopped}
  `;
  const [{ pruned }] = await sql`select sluice.prune_worker_functions('1 day') as pruned`;
  assert.deepEqual(pruned, ["old"]);
  const left = await sql`select function_name from sluice.worker_functions order by 1`;
  assert.deepEqual(left.map((row) => row.function_name), [
    "old_disabled",
    "old_paused",
    "old_with_worker",
    "recent",
  ]);
});

Deno.test("worker_function_drain stays undrained while a task a vanished worker claimed is started", async () => {
  await using db = await freshDatabase();
  const { sql } = db;
  await compileFlow(sql, { slug: "drainee", steps: [{ slug: "only" }] });
  const workerId = await registerWorker(sql, "drainee", "drainee", "drainee-fn");
  await startFlow(sql, "drainee", {});
  await startFlow(sql, "drainee", {});
  const claimed = await readAndClaim(sql, "drainee", workerId, "drainee");
  assert.equal(claimed.length, 2);
  await startFlow(sql, "drainee", {});
  const drainOf = async () => {
    const [row] = await sql`
      select live_workers, serving_workers, started_tasks, queued_tasks, drained
      from sluice.worker_function_drain where function_name = 'drainee-fn'
    `;
    return { ...row };
  };
  assert.deepEqual(await drainOf(), {
    live_workers: 1,
    serving_workers: 1,
    started_tasks: 2,
    queued_tasks: 1,
    drained: false,
  });
  await sql`select sluice.deprecate_function_workers(array['drainee-fn'])`;
  assert.equal((await drainOf()).serving_workers, 0);
  // The worker vanishes without reporting: no live worker, but its tasks are still started.
  await sql`update sluice.workers set last_heartbeat_at = now() - interval '1 minute'`;
  assert.deepEqual(await drainOf(), {
    live_workers: 0,
    serving_workers: 0,
    started_tasks: 2,
    queued_tasks: 1,
    drained: false,
  });
  await sql`update sluice.step_tasks set status = 'queued', started_at = null`;
  assert.equal((await drainOf()).drained, true);
});

Deno.test("set_worker_functions_enabled from racing connections never deadlocks and leaves one value per function", async () => {
  await using db = await freshDatabase();
  const clients = [db.connect(2), db.connect(2), db.connect(2)];
  const names = ["a", "b", "c", "d"];
  await Promise.all(clients.map(async (client, c) => {
    for (let i = 0; i < 30; i++) {
      // Overlapping sets, named in different orders, half of them new rows.
      const settings = Object.fromEntries(
        [...names, `new_${i}`].sort(() => (c % 2 === 0 ? 1 : -1)).map((
          name,
        ) => [name, i % 2 === 0]),
      );
      await client`select * from sluice.set_worker_functions_enabled(${client.json(settings)})`;
    }
  }));
  const [{ count }] = await db.sql`select count(*)::integer as count from sluice.worker_functions`;
  assert.equal(count, names.length + 30);
});
