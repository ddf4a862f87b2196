// Concurrency limits per key under real races (docs/flow_control.md#concurrency-limits): several
// worker processes claim, complete and free slots at once; a SIGKILLed worker's slots come back
// through stall recovery; one key's backlog does not delay the others.
import assert from "node:assert/strict";
import { compileFlow } from "../../src/admin/mod.ts";
import { startFlow } from "../../src/client/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import { spawnWorkerProcess, type WorkerProcess } from "../worker/_worker_process.ts";
import { raceFlow, stallFlow } from "./_race_flows.ts";

const WORKER = new URL("./_race_worker.ts", import.meta.url);

interface HandlerEvent {
  e: "s" | "e";
  key: string;
  n: number;
  t: number;
}

/** Worker subprocesses whose handler events are collected as they print them. */
async function spawnWorkers(
  db: TestDatabase,
  count: number,
  flow: string,
  sleep: string,
  maxConcurrent: number,
): Promise<{ workers: WorkerProcess[]; events: HandlerEvent[] } & AsyncDisposable> {
  const workers = Array.from(
    { length: count },
    () => spawnWorkerProcess(WORKER, [db.url, flow, sleep, String(maxConcurrent)]),
  );
  for (const worker of workers) assert.equal(await worker.nextLine(), "READY");
  const events: HandlerEvent[] = [];
  for (const worker of workers) {
    (async () => {
      for (;;) events.push(JSON.parse(await worker.nextLine()));
    })().catch(() => {});
  }
  return {
    workers,
    events,
    async [Symbol.asyncDispose]() {
      for (const worker of workers) await worker[Symbol.asyncDispose]();
    },
  };
}

/** The most handlers of each key that ran at one instant, from their start and end times. */
function peakByKey(events: readonly HandlerEvent[]): Map<string, number> {
  const peaks = new Map<string, number>();
  const running = new Map<string, number>();
  // At one instant an end comes before a start: a handler that ended has given its slot back.
  const sorted = [...events].sort((a, b) => a.t - b.t || (a.e === "e" ? -1 : 1));
  for (const event of sorted) {
    const now = (running.get(event.key) ?? 0) + (event.e === "s" ? 1 : -1);
    running.set(event.key, now);
    peaks.set(event.key, Math.max(peaks.get(event.key) ?? 0, now));
  }
  return peaks;
}

async function unfinished(db: TestDatabase, flow: string, key?: string): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from sluice.runs
    where flow_slug = ${flow} and status not in ('completed', 'failed')
      and (${key ?? null}::text is null or input ->> 'key' = ${key ?? null})`;
  return n;
}

Deno.test("200 runs over 5 keys with limit 2 on 3 worker processes never run more than 2 per key, and do run 2", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, raceFlow(() => Promise.resolve(0)));
  await using pool = await spawnWorkers(db, 3, "race", "15", 4);

  // SQL's view of the same: the tasks started, and the slots in use, per key, sampled while the
  // runs go.
  const sqlPeaks = new Map<string, number>();
  const slotPeaks = new Map<string, number>();
  const sampling = { on: true };
  const sampler = (async () => {
    const sampleSql = db.connect(1);
    while (sampling.on) {
      const rows = await sampleSql<{ key: string; started: number; slots: number }[]>`
        select concurrency_key as key,
          count(*) filter (where status = 'started')::int as started,
          count(*) filter (where message_id is not null)::int as slots
        from sluice.step_tasks
        where flow_slug = 'race' and status in ('queued', 'started')
        group by concurrency_key`;
      for (const row of rows) {
        sqlPeaks.set(row.key, Math.max(sqlPeaks.get(row.key) ?? 0, row.started));
        slotPeaks.set(row.key, Math.max(slotPeaks.get(row.key) ?? 0, row.slots));
      }
    }
    await sampleSql.end();
  })();

  // Four producers start the runs at once, racing the completions that free slots.
  await Promise.all(Array.from({ length: 4 }, async (_, producer) => {
    const sql = db.connect(1);
    for (let i = producer; i < 200; i += 4) {
      await startFlow(sql, "race", { key: `k${i % 5}`, n: i });
    }
    await sql.end();
  }));
  await waitUntil(async () => await unfinished(db, "race") === 0, "every run finished", 60_000);
  sampling.on = false;
  await sampler;

  const keys = ["k0", "k1", "k2", "k3", "k4"];
  const starts = pool.events.filter((event) => event.e === "s");
  assert.equal(starts.length, 200);
  const peaks = peakByKey(pool.events);
  assert.deepEqual(keys.map((key) => peaks.get(key)), [2, 2, 2, 2, 2]);
  for (const key of keys) {
    assert.ok((sqlPeaks.get(key) ?? 0) <= 2, `${key}: ${sqlPeaks.get(key)} started at once`);
    assert.ok((slotPeaks.get(key) ?? 0) <= 2, `${key}: ${slotPeaks.get(key)} slots at once`);
  }
  assert.ok([...sqlPeaks.values()].some((peak) => peak === 2), "SQL saw 2 started tasks of a key");
  // Each handler ran once: nothing was claimed twice, no attempt was wasted.
  const [{ attempts, reads }] = await db.sql<{ attempts: number; reads: number }[]>`
    select sum(t.attempts_count)::int as attempts,
      (select max(read_ct) from pgmq.a_race)::int as reads
    from sluice.step_tasks t where t.flow_slug = 'race'`;
  assert.deepEqual({ attempts, reads }, { attempts: 200, reads: 1 });
  const [{ left }] = await db.sql`select count(*)::int as left from sluice.concurrency_slots`;
  assert.equal(left, 0);
});

Deno.test("a SIGKILLed worker's slots are freed by stall recovery, and the held tasks of its key run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, stallFlow(() => Promise.resolve(0)));
  const killed = await spawnWorkers(db, 1, "stall", "hang", 4);
  const runs = [];
  for (let n = 0; n < 4; n++) runs.push(await startFlow(db.sql, "stall", { key: "x", n }));
  await waitUntil(() => killed.events.length === 2, "the worker holds both slots");
  const [before] = await db.sql`
    select slots_in_use, running, held from sluice.concurrency_slots`;
  assert.deepEqual({ ...before }, { slots_in_use: 2, running: 2, held: 2 });
  await killed[Symbol.asyncDispose]();

  // The tasks would be stalled after timeout (5 s) + 30 s: pretend that time has passed.
  await db.sql`update sluice.step_tasks set started_at = now() - interval '1 minute'
    where status = 'started'`;
  await using survivor = await spawnWorkers(db, 1, "stall", "0", 4);
  await waitUntil(async () => await unfinished(db, "stall") === 0, "every run finished", 30_000);
  const statuses = await db.sql<{ status: string }[]>`
    select status from sluice.runs order by (input ->> 'n')::int`;
  // The two stalled attempts were the last (maxAttempts 1): their runs failed, their slots went
  // to the two held runs, which the survivor completed.
  assert.deepEqual(statuses.map((row) => row.status).sort(), [
    "completed",
    "completed",
    "failed",
    "failed",
  ]);
  assert.equal(survivor.events.filter((event) => event.e === "e").length, 2);
  const [{ left }] = await db.sql`select count(*)::int as left from sluice.concurrency_slots`;
  assert.equal(left, 0);
});

Deno.test("a 500-run backlog on one key does not delay 4 other keys", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, raceFlow(() => Promise.resolve(0)));
  await db.sql`
    select sluice.start_flow('race', jsonb_build_object('key', 'big', 'n', i))
    from generate_series(1, 500) as i`;
  await db.sql`
    select sluice.start_flow('race', jsonb_build_object('key', 'k' || (i % 4), 'n', i))
    from generate_series(1, 40) as i`;
  const [held] = await db.sql`
    select held from sluice.concurrency_slots where concurrency_key = 'big'`;
  assert.equal(held.held, 498);
  await using pool = await spawnWorkers(db, 2, "race", "20", 6);

  // The other keys' 40 runs finish while the backlog has barely moved: each key has its own
  // slots, and the backlog's held tasks are not in the queue ahead of theirs.
  await waitUntil(
    async () => {
      for (const key of ["k0", "k1", "k2", "k3"]) {
        if (await unfinished(db, "race", key) > 0) return false;
      }
      return true;
    },
    "the four small keys finished",
    30_000,
  );
  const bigLeft = await unfinished(db, "race", "big");
  assert.ok(bigLeft >= 400, `the backlog ran ${500 - bigLeft} runs meanwhile`);
  assert.ok(peakByKey(pool.events).get("big")! <= 2);
});
