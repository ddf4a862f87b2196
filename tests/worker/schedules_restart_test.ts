// Schedules fired by the workers' heartbeats (nothing else fires them here): three workers of one
// flow, a schedule ticking every 2 seconds (croner's seconds field stands in for minutes), and a
// `pg_ctl restart` of the server in the middle. Every tick starts exactly one run, every run
// completes, and ticks keep coming after the restart. A private server (tests/worker/_private_server.ts),
// because the restart would cut every other test's connections.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { getScheduleTicks, schedule } from "../../src/admin/mod.ts";
import { testWorker, waitUntil } from "./_helpers.ts";
import { startPrivateServer } from "./_private_server.ts";

Deno.test("three workers and a pg_ctl restart: every tick of a schedule starts exactly one run", async () => {
  await using server = await startPrivateServer();
  const { sql, db } = server;
  const flow = new Flow<{ kind: string }>({ slug: "ticking", timeout: 5 })
    .step({ slug: "echo" }, (input) => input.kind);
  await using first = await testWorker(flow, db, { heartbeatIntervalMs: 100 });
  await using second = await testWorker(flow, db, { heartbeatIntervalMs: 100 });
  await using third = await testWorker(flow, db, { heartbeatIntervalMs: 100 });
  void [first, second, third];
  await schedule(sql, flow, { cron: "*/2 * * * * *", input: { kind: "tick" } });

  const ticks = async () => await getScheduleTicks(sql, "ticking").catch(() => []);
  await waitUntil(
    async () => (await ticks()).length >= 2,
    "two ticks before the restart",
    30_000,
  );
  await server.restart("fast");
  const before = (await ticks()).length;
  await waitUntil(
    async () => (await ticks()).length >= Math.max(before + 3, 5),
    "three more ticks after the restart",
    60_000,
  );
  await waitUntil(
    async () => {
      const [{ open }] = await sql<{ open: number }[]>`
        select count(*)::integer as open from sluice.runs where status <> 'completed'`;
      return open === 0;
    },
    "every scheduled run completed",
    60_000,
  );

  const fired = await ticks();
  const runs = await sql<{ run_id: string; output: unknown }[]>`
      select run_id, output from sluice.runs where flow_slug = 'ticking'`;
  // One run per tick, none without a tick, and each tick a distinct 2-second mark.
  assert.equal(runs.length, fired.length);
  assert.deepEqual(
    new Set(fired.map((t) => t.runId)),
    new Set(runs.map((r) => r.run_id)),
  );
  assert.equal(new Set(fired.map((t) => t.dueAt.getTime())).size, fired.length);
  assert.ok(fired.every((t) => t.dueAt.getTime() % 2000 === 0 && t.error === null));
  assert.ok(runs.every((r) => JSON.stringify(r.output) === JSON.stringify({ echo: "tick" })));
});
