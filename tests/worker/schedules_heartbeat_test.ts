// A worker's heartbeat and a schedule whose next due time cannot be computed (issue 43 finding 4):
// the heartbeat pauses it with the reason, logs that once, and keeps firing the others.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { compileFlow, getSchedule } from "../../src/admin/mod.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";

Deno.test("the heartbeat pauses a schedule that never fires again, logs it once, and fires the others", async () => {
  await using db = await freshDatabase();
  const flow = new Flow<{ kind: string }>({ slug: uniqueSlug("beat") })
    .step({ slug: "echo" }, (input) => input.kind);
  await compileFlow(db.sql, flow);
  // Written by SQL alone (no croner on the way): February 30, then owed a due time, as after a
  // firing by pg_cron; and a schedule that ticks every second.
  await db.sql`
    select sluice.create_schedule(n, 'flow', ${flow.slug}, '{"kind": "tick"}', c, 'UTC',
      'skip', now() + interval '1 hour', null)
    from (values ('never', '0 0 30 2 *'), ('ticking', '* * * * * *')) v(n, c)`;
  await db.sql`update sluice.schedules set next_due_at = null`;

  await using worker = await testWorker(flow, db, { heartbeatIntervalMs: 50 });
  await waitUntil(
    async () => (await getSchedule(db.sql, "never"))?.pausedAt != null,
    "the never-firing schedule paused",
  );
  const never = await getSchedule(db.sql, "never");
  assert.match(never?.lastError ?? "", /^paused: it never fires after \d{4}-/);
  await waitUntil(
    async () => ((await getSchedule(db.sql, "ticking"))?.lastFiredAt ?? null) !== null,
    "the other schedule fired",
  );
  const paused = worker.logs.find("error", "schedule paused");
  assert.equal(paused.length, 1);
  assert.equal(paused[0].fields.schedule, "never");
});
