// Concurrency and rate limits per key under real races (docs/flow_control.md#concurrency-limits,
// #rate-limits): several worker processes claim, complete and free slots at once; a SIGKILLed
// worker's slots come back through stall recovery; one key's backlog does not delay the others; a
// rate limit holds in every window.
import assert from "node:assert/strict";
import { compileFlow } from "../../src/admin/mod.ts";
import { startFlow } from "../../src/client/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import { spawnWorkerProcess, type WorkerProcess } from "../worker/_worker_process.ts";
import { raceFlow, rateFlow, stallFlow } from "./_race_flows.ts";

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

/** The most of `times` (ms) in any window [t, t + windowMs) that starts at one of them. */
function busiestWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (j < sorted.length && sorted[j] < sorted[i] + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}

Deno.test("a rate limit of 5 per second on 3 worker processes holds in every 1 s window, and reaches 5", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, rateFlow(() => Promise.resolve(0)));
  await using pool = await spawnWorkers(db, 3, "rated", "10", 4);
  await db.sql`
    select sluice.start_flow('rated', jsonb_build_object('key', 'api', 'n', i))
    from generate_series(1, 30) as i`;
  await waitUntil(async () => await unfinished(db, "rated") === 0, "every run finished", 60_000);

  // The claims, as SQL recorded them: none was retried, so each task's started_at is its only one.
  const rows = await db.sql<{ ms: number; attempts: number }[]>`
    select extract(epoch from started_at)::float8 * 1000 as ms, attempts_count as attempts
    from sluice.step_tasks where flow_slug = 'rated'`;
  assert.equal(rows.length, 30);
  assert.ok(rows.every((row) => row.attempts === 1));
  const claims = rows.map((row) => row.ms);
  assert.equal(busiestWindow(claims, 1000), 5);
  // Handlers start a claim's commit and a pipe later: allow them 100 ms of jitter.
  const handlerStarts = pool.events.filter((event) => event.e === "s").map((event) => event.t);
  assert.equal(handlerStarts.length, 30);
  assert.ok(busiestWindow(handlerStarts, 900) <= 5, `${busiestWindow(handlerStarts, 900)}`);
  // 30 starts at 5 per second take at least 5 s from the first to the last.
  const span = Math.max(...claims) - Math.min(...claims);
  assert.ok(span >= 5000, `30 starts took ${span} ms`);
  // Nothing was read while it waited: each message was read once, by the claim.
  const [{ reads }] = await db.sql`select max(read_ct)::int as reads from pgmq.a_rated`;
  assert.equal(reads, 1);
});
