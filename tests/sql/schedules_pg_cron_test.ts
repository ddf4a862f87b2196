// docs/schedules.md's pg_cron job on the real pg_cron (Debian's postgresql-15-cron, loaded through
// shared_preload_libraries in a private server, tests/sql/_pg_cron.ts): with no worker and no Deno
// firer, pg_cron fires the due tick and starts its run; the next due time waits for a Deno sweep,
// which computes it.
// pg_cron 1.4 ticks once a minute, so this test waits up to a minute.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { fireDueSchedules, getSchedule, getScheduleTicks, schedule } from "../../src/admin/mod.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { waitUntil } from "../_support.ts";
import { documentedCronJob, ignorePgCron, startPgCronServer } from "./_pg_cron.ts";

Deno.test({
  name: "pg_cron alone fires a due tick once; the next due time comes from the next Deno sweep",
  ignore: ignorePgCron,
  async fn() {
    await using server = await startPgCronServer();
    const { sql } = server;
    const flow = new Flow<{ n: number }>({ slug: "cron_fired" })
      .step({ slug: "echo" }, (input) => input.n);
    await compileFlow(sql, flow);
    await schedule(sql, flow, { cron: "* * * * *", input: { n: 1 } });
    await sql.unsafe(await documentedCronJob("docs/schedules.md"));

    const ticks = await waitUntil(
      async () => {
        const fired = await getScheduleTicks(sql, "cron_fired");
        return fired.length > 0 ? fired : null;
      },
      "pg_cron to fire the first tick",
      90_000,
    );
    assert.equal(ticks.length, 1);
    assert.equal(ticks[0].error, null);
    const [run] = await sql`select flow_slug, status from sluice.runs where run_id = ${
      ticks[0].runId
    }`;
    assert.deepEqual({ ...run }, { flow_slug: "cron_fired", status: "started" });
    const [job] = await sql`
      select status from cron.job_run_details order by start_time desc limit 1`;
    assert.equal(job.status, "succeeded");

    // SQL never parses cron: no Deno process has computed the next tick yet.
    assert.equal((await getSchedule(sql, "cron_fired"))?.nextDueAt, null);
    assert.deepEqual(await fireDueSchedules(sql), { fired: 0, advanced: 1 });
    const next = (await getSchedule(sql, "cron_fired"))?.nextDueAt;
    assert.ok(next !== null && next !== undefined && next > ticks[0].dueAt);
    assert.equal(next.getTime() - ticks[0].dueAt.getTime(), 60_000);
    await sql`select cron.unschedule('sluice-schedules')`;
  },
});
