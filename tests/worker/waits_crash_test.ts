// Durable waits under the faults production brings: the server restarted (as after a crash)
// while steps wait, and the worker of the step after a wait SIGKILLed mid-task. A wait lives in
// the database, so neither loses it nor releases it twice.
import assert from "node:assert/strict";
import postgres from "postgres";
import { Flow, sendSignal, signalPayload } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { freshDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "./_helpers.ts";
import { startPrivateServer } from "./_private_server.ts";
import { waitCrashFlow } from "./_wait_crash_flow.ts";
import { spawnWorkerProcess } from "./_worker_process.ts";
import { scaled } from "../_support.ts";

async function stepStatuses(sql: postgres.Sql, runId: string): Promise<string> {
  const [{ s }] = await sql<{ s: string }[]>`
    select string_agg(step_slug || ':' || status, ' ' order by step_slug) as s
    from sluice.step_states where run_id = ${runId}`;
  return s;
}

Deno.test("a server restart (immediate, as after a crash) while a sleep and a signal wait: both are released once afterwards", async () => {
  await using server = await startPrivateServer();
  const { sql, db } = server;
  const url = server.server.url;
  const executions: string[] = [];
  const flow = new Flow<{ id: string }>({ slug: "restart_waits", timeout: 5 })
    .step({ slug: "ask" }, (input) => {
      executions.push(`ask:${input.id}`);
      return input.id;
    })
    // Due a few seconds after the wait starts: after the restart below.
    .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 3 }))
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `restart:${deps.ask}`,
      payload: signalPayload<{ approved: boolean }>(),
    })
    .step({ slug: "finish", dependsOn: ["pause", "decision"] }, (deps) => {
      executions.push("finish");
      return { woke: deps.pause, approved: deps.decision.approved };
    });
  await using _worker = await testWorker(flow, db, {
    heartbeatIntervalMs: 100,
  });
  const runId = await startFlow(sql, flow, { id: "r1" });
  await waitUntil(
    async () =>
      await stepStatuses(sql, runId) === "ask:completed decision:waiting " +
          "finish:created pause:waiting",
    "both waits waiting",
  );
  const [{ due }] = await sql<{ due: Date }[]>`
      select wait_until as due from sluice.step_states
      where run_id = ${runId} and step_slug = 'pause'`;
  assert.ok(due.getTime() > Date.now(), "the sleep is still due when the server restarts");

  await server.restart("immediate");
  // The waits survived the crash: still waiting, with no task and no message for them.
  const after = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await waitUntil(async () => {
      try {
        return (await stepStatuses(after, runId)).includes("decision:waiting");
      } catch {
        return false; // the server is still recovering
      }
    }, "the wait after the restart");
    const [{ tasks }] = await after<{ tasks: number }[]>`
        select count(*)::integer as tasks from sluice.step_tasks
        where run_id = ${runId} and step_slug in ('pause', 'decision')`;
    assert.equal(tasks, 0);
    assert.deepEqual(
      await sendSignal(after, {
        key: "restart:r1",
        payload: { approved: true },
        signalId: "after-restart",
      }),
      { signalId: "after-restart", outcome: "sent", released: 1 },
    );
    // The sleep is released by the heartbeat of the worker, which reconnected by itself.
    const output = await waitForRun(after, runId, { timeoutMs: scaled(30_000), flow });
    assert.deepEqual(output, {
      finish: { woke: due.toISOString(), approved: true },
    });
    assert.deepEqual(executions, ["ask:r1", "finish"]);
  } finally {
    await after.end();
  }
});

Deno.test("the worker of the step after a wait is SIGKILLed mid-task: another worker finishes it, the wait is not redone", async () => {
  await using db = await freshDatabase();
  let runId: string;
  {
    await using worker = spawnWorkerProcess(new URL("./_wait_crash_worker.ts", import.meta.url), [
      db.url,
    ]);
    assert.equal(await worker.nextLine(), "READY");
    runId = await startFlow(db.sql, "wait_crashy", { id: "k1" });
    await waitUntil(
      async () => (await stepStatuses(db.sql, runId)).includes("decision:waiting"),
      "the wait",
    );
    const sent = await sendSignal(db.sql, {
      key: "crash:k1",
      payload: { approved: true },
      signalId: "once",
    });
    assert.equal(sent.released, 1);
    assert.equal(await worker.nextLine(), "STARTED after");
  }
  const [crashed] = await db.sql`
    select status, attempts_count from sluice.step_tasks
    where run_id = ${runId} and step_slug = 'after'`;
  assert.deepEqual({ ...crashed }, { status: "started", attempts_count: 1 });

  // The task would be stalled after timeout (5 s) + 30 s: pretend that time has passed.
  await db.sql`update sluice.step_tasks set started_at = now() - interval '1 minute'
    where run_id = ${runId} and step_slug = 'after'`;
  const flow = waitCrashFlow((decision) => Promise.resolve(`approved=${decision.approved}`));
  await using _survivor = await testWorker(flow, db);
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
    after: "approved=true",
  });
  assert.equal(
    await stepStatuses(db.sql, runId),
    "after:completed ask:completed decision:completed",
  );
  const tasks = await db.sql`
    select step_slug, attempts_count from sluice.step_tasks where run_id = ${runId}
    order by step_slug`;
  assert.deepEqual(tasks.map((t) => `${t.step_slug}/${t.attempts_count}`), ["after/2", "ask/1"]);
  const [{ signals }] = await db.sql`select count(*)::integer as signals from sluice.signals`;
  assert.equal(signals, 1);
});
