// docs/waits.md's pg_cron job on the real pg_cron (tests/sql/_pg_cron.ts): with no worker running,
// pg_cron releases a due sleep and starts its dependent's task, which then waits in its queue for
// a worker. pg_cron 1.4 ticks once a minute, so this test waits up to a minute.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import type { TestDatabase } from "../_db.ts";
import { scaled, waitUntil } from "../_support.ts";
import { testWorker } from "../worker/_helpers.ts";
import { documentedCronJob, ignorePgCron, startPgCronServer } from "./_pg_cron.ts";

Deno.test({
  name: "pg_cron alone releases a due sleep while no worker runs; a worker then finishes the run",
  ignore: ignorePgCron,
  async fn() {
    await using server = await startPgCronServer();
    const { sql } = server;
    const db = { url: server.server.url } as TestDatabase;
    const flow = new Flow<{ n: number }>({ slug: "cron_waits" })
      .step({ slug: "ask" }, (input) => input.n)
      .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 1 }))
      .step({ slug: "after", dependsOn: ["pause"] }, (deps) => deps.pause.length > 0);
    let runId: string;
    {
      await using _worker = await testWorker(flow, db);
      runId = await startFlow(sql, flow, { n: 1 });
      await waitUntil(async () => {
        const [row] = await sql`select status from sluice.step_states
          where run_id = ${runId} and step_slug = 'pause'`;
        return row?.status === "waiting";
      }, "the sleep waiting");
    }
    // No worker runs now: only pg_cron can release the sleep.
    await sql.unsafe(await documentedCronJob("docs/waits.md"));
    await waitUntil(
      async () => {
        const [row] = await sql`select status from sluice.step_states
        where run_id = ${runId} and step_slug = 'pause'`;
        return row.status === "completed";
      },
      "pg_cron to release the sleep",
      90_000,
    );
    const [task] = await sql`select status from sluice.step_tasks
      where run_id = ${runId} and step_slug = 'after'`;
    assert.equal(task.status, "queued");
    // pg_cron records a job's end after the job's own transaction commits: the release can be
    // visible while the run's row still says running.
    let jobStatus = "";
    await waitUntil(async () => {
      const [job] = await sql`select status from cron.job_run_details
        where status <> 'running' order by start_time desc limit 1`;
      jobStatus = job?.status ?? "";
      return job !== undefined;
    }, "pg_cron to record the job's end");
    assert.equal(jobStatus, "succeeded");
    await sql`select cron.unschedule('sluice-waits')`;

    await using _worker = await testWorker(flow, db);
    assert.deepEqual(await waitForRun(sql, runId, { timeoutMs: scaled(10_000), flow }), {
      after: true,
    });
  },
});
