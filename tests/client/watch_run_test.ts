// watchRun(): replay, live NOTIFY events, reconnects, polling; waitForRun() over LISTEN.
import assert from "node:assert/strict";
import { waitForRun, watchRun } from "../../src/client/mod.ts";
import { runChannel } from "../../src/events/run_event.ts";
import { connect } from "../../src/db/connect.ts";
import { freshDatabase } from "../_db.ts";
import {
  collect,
  mixedEvents,
  mixedFlow,
  MixedRunDriver,
  withoutProgress,
} from "../_run_events.ts";
import { scaled, waitUntil, within } from "../_support.ts";
import {
  compileFlow,
  completeTask,
  readAndClaim,
  registerWorker,
  startFlow,
} from "../sql/_fixtures.ts";

Deno.test("watchRun() replays the state to a subscriber that connects mid-run, then passes on the rest", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const driver = new MixedRunDriver(db.sql, "watched");
  await driver.step(); // list
  await driver.step(1); // double[0]

  const watcher = collect(watchRun(db.sql, runId));
  await waitUntil(() => watcher.events.length >= 6, "the replayed state");
  assert.deepEqual(watcher.events, mixedEvents(runId, "watched").slice(0, 6));

  await driver.finish();
  await within(watcher.done, "the terminal event", 5_000);
  assert.deepEqual(watcher.events, mixedEvents(runId, "watched"));
});

Deno.test("watchRun() re-establishes a killed listener connection and the terminal event arrives once", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const driver = new MixedRunDriver(db.sql, "watched");
  const listening = () =>
    db.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where datname = current_database() and query like ${`listen sluice_run_%`}`;

  // No periodic resync: only the reconnect can recover what the outage loses.
  const watcher = collect(watchRun(db.sql, runId, { resyncIntervalMs: 3_600_000 }));
  await waitUntil(() => watcher.events.length >= 2, "the replayed start");
  const [{ pid }] = await waitUntil(async () => {
    const rows = await listening();
    return rows.length === 1 ? rows : null;
  }, "the listener session");
  await db.sql`select pg_terminate_backend(${pid})`;
  await waitUntil(async () => {
    const [{ n }] = await db
      .sql`select count(*)::int as n from pg_stat_activity where pid = ${pid}`;
    return n === 0;
  }, "the killed session to be gone");
  // The rest of the run, the terminal event included, happens while the listener may be down:
  // what it misses only the reconnect's replay can bring (no periodic resync here).
  await driver.finish();
  await within(watcher.done, "the terminal event", 5_000);

  // A replay is a state: of the progress made during the outage only the latest can show.
  assert.deepEqual(withoutProgress(watcher.events), withoutProgress(mixedEvents(runId, "watched")));
  const done = watcher.events.filter((e) => e.type === "step:progress").map((e) => e.done);
  assert.deepEqual(done, [...new Set(done)].sort(), "progress only moves forward, never twice");
  assert.equal(watcher.events.filter((e) => e.type === "run:completed").length, 1);
});

Deno.test("watchRun() polls the state of a run whose flow has events off", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched", { events: false }));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const watcher = collect(watchRun(db.sql, runId, { resyncIntervalMs: 3_600_000 }));
  await waitUntil(() => watcher.events.length >= 2, "the replayed start");
  await new MixedRunDriver(db.sql, "watched").finish();
  await within(watcher.done, "the terminal event", 5_000);
  // Polling sees states, not every transition: progress between two reads is not seen.
  assert.deepEqual(withoutProgress(watcher.events), withoutProgress(mixedEvents(runId, "watched")));
});

Deno.test("watchRun() reads back an output too large for NOTIFY", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "big", steps: [{ slug: "blob" }] });
  const runId = await startFlow(db.sql, "big", {});
  const watcher = collect(watchRun(db.sql, runId, { resyncIntervalMs: 3_600_000 }));
  await waitUntil(() => watcher.events.length >= 2, "the replayed start");
  const workerId = await registerWorker(db.sql, "big", "big");
  const [task] = await readAndClaim(db.sql, "big", workerId, "big");
  const blob = "x".repeat(20_000);
  await completeTask(db.sql, task, blob);
  await within(watcher.done, "the terminal event", 5_000);
  assert.deepEqual(watcher.events.slice(2), [
    { type: "step:completed", runId, stepSlug: "blob", output: blob },
    { type: "run:completed", runId, flowSlug: "big", output: { blob } },
  ]);
});

Deno.test("watchRun() rejects a malformed run id at once and an unknown run from the iteration", async () => {
  await using db = await freshDatabase();
  assert.throws(() => watchRun(db.sql, "nope"), /Cannot watch run: the run id must be a UUID/);
  assert.throws(
    () => watchRun(db.sql, crypto.randomUUID(), { resyncIntervalMs: 0 }),
    /resyncIntervalMs must be a positive number, got 0/,
  );
  const unknown = crypto.randomUUID();
  await assert.rejects(
    watchRun(db.sql, unknown).next(),
    new RangeError(`Cannot watch run ${unknown}: no such run`),
  );
});

Deno.test("waitForRun() listens for the run's events instead of polling", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  // Polling once an hour: only the events can end this wait.
  const waiting = waitForRun(db.sql, runId, {
    timeoutMs: scaled(60_000),
    pollIntervalMs: 3_600_000,
    maxPollIntervalMs: 3_600_000,
  });
  await waitUntil(async () => {
    const [{ n }] = await db.sql`
      select count(*)::int as n from pg_stat_activity
      where query like ${`listen ${runChannel(runId)}%`}`;
    return n === 1;
  }, "a session listening on the run's channel");
  await new MixedRunDriver(db.sql, "watched").finish();
  assert.deepEqual(await waiting, { flaky: "ok" });
});

Deno.test("waitForRun() finishes by its re-read on the pool while the listener's backend is frozen (SIGSTOP)", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const waiting = waitForRun(db.sql, runId, { timeoutMs: scaled(20_000) });
  const [{ pid }] = await waitUntil(async () => {
    const rows = await db.sql<{ pid: number }[]>`
      select pid from pg_stat_activity
      where query like ${`listen ${runChannel(runId)}%`}`;
    return rows.length === 1 ? rows : null;
  }, "a session listening on the run's channel");
  // A half-open listener: its backend takes no statement and sends no notification.
  Deno.kill(pid, "SIGSTOP");
  try {
    await new MixedRunDriver(db.sql, "watched").finish();
    // The old watcher awaited a LISTEN on the frozen session before every re-read: RunTimeoutError.
    assert.deepEqual(await waiting, { flaky: "ok" });
  } finally {
    Deno.kill(pid, "SIGCONT");
  }
});

Deno.test("waitForRun() on a connect() pool survives pg_terminate_backend of its read in flight and resolves", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, mixedFlow("watched"));
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const pool = connect(db.url);
  try {
    // The watcher's first read of the state waits on this lock, in flight when it is cut.
    let release!: () => void;
    const released = new Promise<void>((resolve) => release = resolve);
    const locking = db.sql.begin(async (tx) => {
      await tx`lock table sluice.runs in access exclusive mode`;
      await released;
    });
    const [{ pid: lockPid }] = await waitUntil(async () => {
      const rows = await db.sql<{ pid: number }[]>`
        select pid from pg_stat_activity where query like 'lock table sluice.runs%'`;
      return rows.length === 1 ? rows : null;
    }, "the lock");
    const waiting = waitForRun(pool, runId, { timeoutMs: scaled(30_000) });
    const [{ pid }] = await waitUntil(async () => {
      const rows = await db.sql<{ pid: number }[]>`
        select pid from pg_stat_activity
        where wait_event_type = 'Lock' and query like '%sluice.run_events%'`;
      return rows.length === 1 ? rows : null;
    }, "the watcher's read waiting on the lock");
    assert.notEqual(pid, lockPid);
    await db.sql`select pg_terminate_backend(${pid})`;
    release();
    await locking;
    await new MixedRunDriver(db.sql, "watched").finish();
    // The old watcher rejected here with the cut read's 57P01.
    assert.deepEqual(await waiting, { flaky: "ok" });
  } finally {
    await pool.end({ timeout: 0 });
  }
});
