// watchRun(): replay, live NOTIFY events, reconnects, polling; waitForRun() over LISTEN.
import assert from "node:assert/strict";
import { type RunEvent, waitForRun, watchRun } from "../../src/client/mod.ts";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import {
  compileFlow,
  completeTask,
  failTask,
  readAndClaim,
  registerWorker,
  type Sql,
  startFlow,
} from "../sql/_fixtures.ts";

const FLOW = {
  slug: "watched",
  progressInterval: 0,
  steps: [
    { slug: "list" },
    { slug: "premium", if: { tier: "gold" } },
    { slug: "double", type: "map" as const, deps: ["list"], mapSource: "list" },
    { slug: "flaky", deps: ["double"], maxAttempts: 2 },
  ],
};

function expectedEvents(runId: string): Record<string, unknown>[] {
  return [
    { type: "run:started", runId, flowSlug: "watched" },
    { type: "step:started", runId, stepSlug: "list", tasks: 1 },
    {
      type: "step:skipped",
      runId,
      stepSlug: "premium",
      reason: "condition_unmet",
      errorMessage: null,
    },
    { type: "step:completed", runId, stepSlug: "list", output: [1, 2, 3] },
    { type: "step:started", runId, stepSlug: "double", tasks: 3 },
    { type: "step:progress", runId, stepSlug: "double", done: 1, total: 3 },
    { type: "step:progress", runId, stepSlug: "double", done: 2, total: 3 },
    { type: "step:completed", runId, stepSlug: "double", output: [2, 4, 6] },
    { type: "step:started", runId, stepSlug: "flaky", tasks: 1 },
    { type: "step:completed", runId, stepSlug: "flaky", output: "ok" },
    { type: "run:completed", runId, flowSlug: "watched", output: { flaky: "ok" } },
  ];
}

/** Claims what is visible and settles it task by task: flaky fails its first attempt. */
class Driver {
  #flakyAttempts = 0;
  #workerId: Promise<string>;
  #sql: Sql;
  /** Claimed tasks not settled yet. */
  #held: Awaited<ReturnType<typeof readAndClaim>> = [];

  constructor(sql: Sql) {
    this.#sql = sql;
    this.#workerId = registerWorker(sql, "watched", "watched");
  }

  /** Claims what is visible, then settles at most `limit` held tasks; returns how many. */
  async step(limit = Infinity): Promise<number> {
    this.#held.push(...await readAndClaim(this.#sql, "watched", await this.#workerId, "watched"));
    this.#held.sort((a, b) =>
      a.step_slug.localeCompare(b.step_slug) || a.task_index - b.task_index
    );
    let settled = 0;
    while (settled < limit && this.#held.length > 0) {
      const task = this.#held.shift()!;
      settled++;
      if (task.step_slug === "list") await completeTask(this.#sql, task, [1, 2, 3]);
      else if (task.step_slug === "double") {
        await completeTask(this.#sql, task, (task.input as number) * 2);
      } else if (++this.#flakyAttempts === 1) await failTask(this.#sql, task, "flaky once", 0);
      else await completeTask(this.#sql, task, "ok");
    }
    return settled;
  }

  async finish(): Promise<void> {
    for (let round = 0; round < 20; round++) if (await this.step() === 0) return;
  }
}

/** Rejects when `promise` has not settled within 15 s, instead of hanging the suite. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what}`)), 15_000);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Collects a run's events in the background. */
function collect(iterator: AsyncGenerator<RunEvent, void, undefined>) {
  const events: Record<string, unknown>[] = [];
  const done = (async () => {
    for await (const { at, ...event } of iterator) {
      assert.equal(typeof at, "string");
      events.push(event);
    }
  })();
  return { events, done };
}

Deno.test("watchRun() replays the state to a subscriber that connects mid-run, then passes on the rest", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, FLOW);
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const driver = new Driver(db.sql);
  await driver.step(); // list
  await driver.step(1); // double[0]

  const watcher = collect(watchRun(db.sql, runId));
  await waitUntil(() => watcher.events.length >= 6, "the replayed state");
  assert.deepEqual(watcher.events, expectedEvents(runId).slice(0, 6));

  await driver.finish();
  await within(watcher.done, "the terminal event");
  assert.deepEqual(watcher.events, expectedEvents(runId));
});

Deno.test("watchRun() re-establishes a killed listener connection and the terminal event arrives once", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, FLOW);
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const driver = new Driver(db.sql);
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
  await within(watcher.done, "the terminal event");

  // A replay is a state: of the progress made during the outage only the latest can show.
  const withoutProgress = (events: Record<string, unknown>[]) =>
    events.filter((e) => e.type !== "step:progress");
  assert.deepEqual(withoutProgress(watcher.events), withoutProgress(expectedEvents(runId)));
  const done = watcher.events.filter((e) => e.type === "step:progress").map((e) => e.done);
  assert.deepEqual(done, [...new Set(done)].sort(), "progress only moves forward, never twice");
  assert.equal(watcher.events.filter((e) => e.type === "run:completed").length, 1);
});

Deno.test("watchRun() polls the state of a run whose flow has events off", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { ...FLOW, events: false });
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  const watcher = collect(watchRun(db.sql, runId, { resyncIntervalMs: 3_600_000 }));
  await waitUntil(() => watcher.events.length >= 2, "the replayed start");
  await new Driver(db.sql).finish();
  await within(watcher.done, "the terminal event");
  // Polling sees states, not every transition: progress between two reads is not seen.
  assert.deepEqual(
    watcher.events.filter((e) => e.type !== "step:progress"),
    expectedEvents(runId).filter((e) => e.type !== "step:progress"),
  );
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
  await within(watcher.done, "the terminal event");
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
  await compileFlow(db.sql, FLOW);
  const runId = await startFlow(db.sql, "watched", { tier: "silver" });
  // Polling once an hour: only the events can end this wait.
  const waiting = waitForRun(db.sql, runId, {
    timeoutMs: 60_000,
    pollIntervalMs: 3_600_000,
    maxPollIntervalMs: 3_600_000,
  });
  await waitUntil(async () => {
    const [{ n }] = await db.sql`
      select count(*)::int as n from pg_stat_activity
      where query like ${`listen ${`sluice_run_${runId.replaceAll("-", "")}`}%`}`;
    return n === 1;
  }, "a session listening on the run's channel");
  await new Driver(db.sql).finish();
  assert.deepEqual(await waiting, { flaky: "ok" });
});
