import assert from "node:assert/strict";
import type { Sql } from "postgres";
import { freshDatabase } from "../_db.ts";

Deno.test("claim_respawn() wins once for the last_invoked_at an isolate saw, and moves it", async () => {
  await using db = await freshDatabase();
  await db.sql`select sluice.track_worker_function('fn')`;

  const [first] = await db.sql`select sluice.claim_respawn('fn', null) as claimed`;
  assert.equal(first.claimed, true);
  const [again] = await db.sql`select sluice.claim_respawn('fn', null) as claimed`;
  assert.equal(again.claimed, false, "an isolate that saw the old value loses");

  const [{ seen }] = await db.sql`
    select last_invoked_at::text as seen from sluice.worker_functions where function_name = 'fn'`;
  assert.notEqual(seen, null);
  const [successor] = await db
    .sql`select sluice.claim_respawn('fn', ${seen}::text::timestamptz) as claimed`;
  assert.equal(successor.claimed, true, "the successor, which saw the new value, may respawn too");
  const [{ moved }] = await db.sql`
    select last_invoked_at > ${seen}::text::timestamptz as moved
    from sluice.worker_functions where function_name = 'fn'`;
  assert.equal(moved, true);
});

Deno.test("claim_respawn() claims nothing for a disabled, restart-paused or untracked function", async () => {
  await using db = await freshDatabase();
  await db.sql`select sluice.track_worker_function('off')`;
  await db.sql`update sluice.worker_functions set enabled = false where function_name = 'off'`;
  await db.sql`select sluice.track_worker_function('held')`;
  await db.sql`
    update sluice.worker_functions set restart_paused_at = now(), pause_reason = 'test'
    where function_name = 'held'`;

  for (const name of ["off", "held", "unknown"]) {
    const [row] = await db.sql`select sluice.claim_respawn(${name}, null) as claimed`;
    assert.equal(row.claimed, false, name);
  }
  const rows = await db.sql`
    select function_name from sluice.worker_functions where last_invoked_at is not null`;
  assert.equal(rows.length, 0, "nothing changed");
});

Deno.test("claim_respawn() from ten concurrent sessions with the same seen value: exactly one wins", async () => {
  await using db = await freshDatabase();
  await db.sql`select sluice.track_worker_function('crowd')`;
  const clients = Array.from({ length: 10 }, () => db.connect(1));
  // Hold the row lock so that every claimant is queued on it before the first one decides.
  const { claims } = await db.sql.begin(async (tx) => {
    await tx`select 1 from sluice.worker_functions where function_name = 'crowd' for update`;
    const claims = clients.map((sql) =>
      sql`select sluice.claim_respawn('crowd', null) as claimed`.then(([row]) => row.claimed)
    );
    await waitForLockWaiters(db.sql, 10);
    return { claims };
  });
  const claimed = await Promise.all(claims);
  assert.equal(claimed.filter(Boolean).length, 1, JSON.stringify(claimed));
});

/** Waits until `n` sessions of this database wait for a lock. */
async function waitForLockWaiters(sql: Sql, n: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [{ waiting }] = await sql`
      select count(*)::int as waiting from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    if (waiting >= n) return;
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${n} lock waiters`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
