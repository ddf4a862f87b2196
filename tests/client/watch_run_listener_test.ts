// watchRun()/waitForRun(): every watch of one pool shares one LISTEN session, which is replaced
// once for all when it is lost or stops answering (issue 27.9).
import assert from "node:assert/strict";
import { waitForRun, watchRun } from "../../src/client/mod.ts";
import { connect } from "../../src/db/connect.ts";
import { freshDatabase } from "../_db.ts";
import { collect, mixedEvents, mixedFlow, MixedRunDriver } from "../_run_events.ts";
import { waitUntil, within } from "../_support.ts";
import { compileFlow, startFlow } from "../sql/_fixtures.ts";

Deno.test("1,000 concurrent watches of one connect() pool hold the pool's connections and one LISTEN session", async () => {
  await using db = await freshDatabase();
  const pool = connect(db.url, { max: 4, applicationName: "watchers" });
  try {
    const runs: { slug: string; runId: string }[] = [];
    for (let flow = 0; flow < 10; flow++) {
      const slug = `watched_${flow}`;
      await compileFlow(db.sql, mixedFlow(slug));
      runs.push({ slug, runId: await startFlow(db.sql, slug, { tier: "silver" }) });
    }
    const watchers = runs.flatMap(({ runId }) =>
      Array.from({ length: 100 }, () => collect(watchRun(pool, runId)))
    );
    const waits = runs.map(({ runId }) => waitForRun(pool, runId, { timeoutMs: 60_000 }));
    await waitUntil(
      () => watchers.every((watcher) => watcher.events.length >= 2),
      "every watch's replayed start",
      60_000,
    );
    const [{ connections }] = await db.sql<{ connections: number }[]>`
      select count(*)::int as connections from pg_stat_activity
      where application_name = 'watchers'`;
    // The pool's 4 and one shared listener (one session per watch before: 1,010).
    assert.ok(connections <= 5, `${connections} connections for 1,010 watches`);

    for (const { slug } of runs) await new MixedRunDriver(db.sql, slug).finish();
    await within(Promise.all(watchers.map((watcher) => watcher.done)), "every terminal event");
    for (const [index, watcher] of watchers.entries()) {
      const { runId, slug } = runs[Math.floor(index / 100)];
      assert.deepEqual(
        watcher.events.filter((event) => event.type !== "step:progress"),
        mixedEvents(runId, slug).filter((event) => event.type !== "step:progress"),
      );
    }
    assert.deepEqual(await Promise.all(waits), runs.map(() => ({ flaky: "ok" })));
    // The last watch closes the shared session.
    await waitUntil(async () => {
      const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where application_name = 'watchers' and (query like 'listen %' or query like '%listener_ping%')`;
      return n === 0;
    }, "the shared listener session closed");
  } finally {
    await pool.end();
  }
});

Deno.test("watchRun() replaces a frozen listener session (SIGSTOP) by its ping and then gets the live events", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const pool = connect(db.url, { max: 2, applicationName: "frozen_listener" });
  const listeners = () =>
    db.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where application_name = 'frozen_listener' and (query like 'listen %' or query like '%listener_ping%')`;
  try {
    // No periodic resync: only a new LISTEN session can deliver what follows.
    const watcher = collect(watchRun(pool, runId, { resyncIntervalMs: 3_600_000 }));
    await waitUntil(() => watcher.events.length >= 2, "the replayed start");
    const [{ pid }] = await waitUntil(async () => {
      const rows = await listeners();
      return rows.length === 1 ? rows : null;
    }, "the listener session");
    Deno.kill(pid, "SIGSTOP");
    try {
      // A new session LISTENs (the frozen one still counts until it is terminated).
      await waitUntil(async () => {
        const rows = await listeners();
        return rows.some((row) => row.pid !== pid);
      }, "a replacement listener session");
      await new MixedRunDriver(db.sql, "watched").finish();
      await within(watcher.done, "the terminal event over the new session");
      assert.deepEqual(
        watcher.events.filter((event) => event.type !== "step:progress"),
        mixedEvents(runId, "watched").filter((event) => event.type !== "step:progress"),
      );
    } finally {
      Deno.kill(pid, "SIGCONT");
      await db.sql`select pg_terminate_backend(${pid})`;
    }
  } finally {
    await pool.end();
  }
});
