// Cancels racing completions and signals with a real worker process (issue 45): a cancel that
// waited for a run's lock while a completion or a signal created tasks must cancel those too, or a
// worker claims work of a cancelled run, and its task stays 'started' for good.
//
// "A handler started after the cancel committed" is told from the handler's own record: each
// handler reads its run's and its task's state in one statement as it starts. A claim committed
// before a cancel leaves its task for the cancel to end, so a handler that starts late sees its
// task cancelled with the run; only an attempt claimed after the cancel committed sees its run
// cancelled while its own task is live.
import assert from "node:assert/strict";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { sendSignal } from "../../src/client/send_signal.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import {
  chainFlow,
  CREATE_HANDLER_STARTS,
  HANDLER_STARTS,
  signalFlow,
} from "./_cancel_race_flow.ts";
import { spawnWorkerProcess } from "./_worker_process.ts";

const WORKER_SCRIPT = new URL("./_cancel_race_worker.ts", import.meta.url);

function jitter(maxMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * maxMs)));
}

/**
 * Every run ended, nothing is queued, and the handler of every started or completed task's attempt
 * has recorded its start (a claimed attempt that a cancel ended may never run its handler).
 */
async function settled(db: TestDatabase, runIds: string[]): Promise<boolean> {
  const [row] = await db.sql<{ running: number; queued: number; unrecorded: number }[]>`
    select
      (select count(*)::int from sluice.runs
        where run_id = any (${runIds}) and status = 'started') as running,
      (select count(*)::int from sluice.step_tasks
        where run_id = any (${runIds}) and status = 'queued') as queued,
      (select count(*)::int from sluice.step_tasks t
        where t.run_id = any (${runIds}) and t.status in ('started', 'completed')
          and not exists (select 1 from ${db.sql(HANDLER_STARTS)} h
            where h.run_id = t.run_id and h.step_slug = t.step_slug
              and h.task_index = t.task_index and h.attempt = t.attempts_count)) as unrecorded`;
  return row.running === 0 && row.queued === 0 && row.unrecorded === 0;
}

interface Defects {
  cancelled: number;
  /** Cancelled runs with a queued or started task. */
  openTasks: number;
  /** Live messages of cancelled runs' tasks. */
  liveMessages: number;
  /** Handlers that started after their run's cancel committed, on a task it left live. */
  lateHandlers: number;
}

async function defects(db: TestDatabase, runIds: string[], queue: string): Promise<Defects> {
  const [row] = await db.sql<Defects[]>`
    select
      (select count(*)::int from sluice.runs
        where run_id = any (${runIds}) and status = 'cancelled') as cancelled,
      (select count(distinct r.run_id)::int from sluice.runs r
        join sluice.step_tasks t on t.run_id = r.run_id
        where r.run_id = any (${runIds}) and r.status = 'cancelled'
          and t.status in ('queued', 'started')) as "openTasks",
      (select count(*)::int from ${db.sql("pgmq")}.${db.sql(`q_${queue}`)} q
        join sluice.step_tasks t on t.queue_name = ${queue} and t.message_id = q.msg_id
        join sluice.runs r on r.run_id = t.run_id
        where r.run_id = any (${runIds}) and r.status = 'cancelled') as "liveMessages",
      (select count(*)::int from ${db.sql(HANDLER_STARTS)} h
        where h.run_id = any (${runIds}) and h.run_status = 'cancelled'
          and h.task_status = 'started' and h.task_attempt = h.attempt) as "lateHandlers"`;
  return { ...row };
}

Deno.test("200 cancels racing a worker's completions: no cancelled run keeps a task or a live message, no handler starts after its cancel", async () => {
  await using db = await freshDatabase();
  await db.sql.unsafe(CREATE_HANDLER_STARTS);
  await using worker = spawnWorkerProcess(WORKER_SCRIPT, [db.url]);
  assert.equal(await worker.nextLine(), "READY");
  const cancellers = db.connect(4);

  const runIds: string[] = [];
  for (let i = 0; i < 200; i++) runIds.push(await startFlow(db.sql, chainFlow, { n: i }));
  await Promise.all(runIds.map(async (runId) => {
    await jitter(60);
    await cancelRun(cancellers, runId, { reason: "race" });
  }));

  await waitUntil(() => settled(db, runIds), "the runs to settle", 60_000);
  const found = await defects(db, runIds, "cancel_race_chain");
  assert.ok(found.cancelled > 0, "no cancel landed before its run completed");
  assert.deepEqual(
    { openTasks: found.openTasks, liveMessages: found.liveMessages, late: found.lateHandlers },
    { openTasks: 0, liveMessages: 0, late: 0 },
  );
});

Deno.test("signals racing cancels of waiting runs: no cancelled run keeps the released step's task, no handler starts after its cancel", async () => {
  await using db = await freshDatabase();
  await db.sql.unsafe(CREATE_HANDLER_STARTS);
  await using worker = spawnWorkerProcess(WORKER_SCRIPT, [db.url]);
  assert.equal(await worker.nextLine(), "READY");
  const signallers = db.connect(4);
  const cancellers = db.connect(4);

  const runIds: string[] = [];
  for (let i = 0; i < 40; i++) {
    runIds.push(await startFlow(db.sql, signalFlow, { id: `r${i}` }));
  }
  await waitUntil(
    async () => {
      const [{ waiting }] = await db.sql<{ waiting: number }[]>`
      select count(*)::int as waiting from sluice.step_states
      where run_id = any (${runIds}) and step_slug = 'decision' and status = 'waiting'`;
      return waiting === runIds.length;
    },
    "every run waiting for its signal",
    60_000,
  );

  await Promise.all(runIds.map(async (runId, i) => {
    await Promise.all([
      (async () => {
        await jitter(5);
        await sendSignal(signallers, {
          key: `decision:r${i}`,
          signalId: `signal-${i}`,
          payload: { approved: true },
        });
      })(),
      (async () => {
        await jitter(5);
        await cancelRun(cancellers, runId, { reason: "race" });
      })(),
    ]);
  }));

  await waitUntil(() => settled(db, runIds), "the runs to settle", 60_000);
  const found = await defects(db, runIds, "cancel_race_signal");
  assert.ok(found.cancelled > 0, "no cancel landed before its signal's work completed");
  assert.deepEqual(
    { openTasks: found.openTasks, liveMessages: found.liveMessages, late: found.lateHandlers },
    { openTasks: 0, liveMessages: 0, late: 0 },
  );
});
