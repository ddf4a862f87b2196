// Runs every command and SQL block of docs/from_pgflow.md, in document order, against one test
// database with pgflow 0.14.1's own migrations loaded next to sluice (tests/docs/_pgflow.ts): a
// pgflow flow with a run in flight, its port deployed under a new concrete slug with pgflow's name
// as its alias, producers switched, pgflow drained and removed. Each `sh` command is
// `deno task sluice <command>`, run in-process; each `sql` block runs as written.
import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, waitForRun } from "../../mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { main } from "../../src/cli/main.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker, waitUntil } from "../worker/_helpers.ts";
import { codeBlocks, shellCommands } from "./_guides.ts";
import { loadPgflow, pgflowAvailable } from "./_pgflow.ts";

const GUIDE = "docs/from_pgflow.md";

/** The guide's port of pgflow's `analyze_website`, as its TypeScript block defines it. */
const analyzeWebsiteV2 = new Flow<{ url: string }>({ slug: "analyze_website_v2", maxAttempts: 3 })
  .step({ slug: "website" }, (input) => ({ content: `page of ${input.url}` }))
  .step({ slug: "summary", dependsOn: ["website"] }, (deps) => deps.website.content.length);
const analyzeWebsite = defineDeployedFlow(analyzeWebsiteV2, { alias: "analyze_website" });

/** Runs `deno task sluice <command>` in-process; fails unless it exits 0. */
async function sluice(db: TestDatabase, command: string): Promise<string> {
  const prefix = "deno task sluice ";
  assert.ok(command.startsWith(prefix), `${GUIDE}: not a sluice command: ${command}`);
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(command.slice(prefix.length).split(/ +/), {
    databaseUrl: db.url,
    io: { out: (line) => out.push(line), err: (line) => err.push(line) },
  });
  assert.equal(code, 0, `${command}: ${err.join("\n")}`);
  return out.join("\n");
}

/** What pgflow's worker does for one task of a queue: read, start, complete. */
async function completePgflowTask(db: TestDatabase, workerId: string, output: unknown) {
  const messages = await db.sql<{ msg_id: string }[]>`
    select msg_id from pgmq.read_with_poll('analyze_website', 30, 10, 1, 100)`;
  assert.equal(messages.length, 1);
  const [task] = await db.sql<{ run_id: string; step_slug: string; task_index: number }[]>`
    select run_id, step_slug, task_index from pgflow.start_tasks('analyze_website',
      ${messages.map((m) => m.msg_id)}::bigint[], ${workerId}::uuid)`;
  await db.sql`select pgflow.complete_task(${task.run_id}::uuid, ${task.step_slug},
    ${task.task_index}, ${db.sql.json(output as never)})`;
  return task.step_slug;
}

Deno.test({
  name:
    "docs/from_pgflow.md: a running pgflow project moves to sluice, pgflow drains and is removed",
  ignore: !pgflowAvailable(),
  async fn() {
    await using db = await freshDatabase();
    await loadPgflow(db.sql);
    // pg_cron's job table, which pgflow's cron jobs are rows of, and an unschedule that removes
    // one (stubs.sql's does nothing).
    await db.sql.unsafe(`
      create table cron.job (jobid bigint primary key, jobname text);
      create or replace function cron.unschedule(job_id bigint) returns boolean language sql
        as $$ delete from cron.job where jobid = job_id returning true $$;
      insert into cron.job values (1, 'pgflow_ensure_workers'), (2, 'pgflow_cleanup_logs'),
        (3, 'pgflow_requeue_stalled_tasks'), (4, 'app_nightly_report')`);
    // The pgflow project: its flow, compiled as pgflow does, and a run in flight.
    await db.sql`select pgflow.create_flow('analyze_website', max_attempts => 3)`;
    await db.sql`select pgflow.add_step('analyze_website', 'website')`;
    await db.sql`select pgflow.add_step('analyze_website', 'summary', array['website'])`;
    const [pgflowRun] = await db.sql<{ run_id: string }[]>`
      select run_id from pgflow.start_flow('analyze_website', '{"url": "https://a.example"}')`;
    const pgflowWorker = crypto.randomUUID();
    await db.sql`insert into pgflow.workers (worker_id, queue_name, function_name)
      values (${pgflowWorker}::uuid, 'analyze_website', 'analyze-website-worker')`;

    // Step 2: a sluice flow named like pgflow's is refused, as the guide quotes.
    const text = await Deno.readTextFile(new URL(`../../${GUIDE}`, import.meta.url));
    const sameName = await compileFlow(
      db.sql,
      new Flow({ slug: "analyze_website" }).step({ slug: "website" }, () => 1),
    ).catch((error) => error);
    const refusal = /`(Cannot compile flow "analyze_website": queue [^`]+)`/.exec(text)![1];
    assert.equal(sameName.message, refusal);
    // Its port, under a new slug, with a live worker.
    await using _worker = await testWorker(analyzeWebsite, db);

    const blocks = codeBlocks(text).filter((block) => block.lang === "sh" || block.lang === "sql");
    assert.deepEqual(blocks.map((block) => block.lang), ["sh", "sql", "sh", "sql", "sql"]);
    const [alias, start, runs, drained, remove] = blocks;

    // Step 3: coverage, then the alias under pgflow's name.
    const [coverage, activate] = shellCommands(alias.body);
    assert.match(await sluice(db, coverage), /analyze_website_v2 +summary .* ok$/m);
    assert.match(await sluice(db, activate), /analyze_website/);
    assert.equal(shellCommands(alias.body).length, 2);

    // Step 4: the producer's SQL starts a sluice run through the alias.
    const [{ start_flow: runId }] = await db.sql.unsafe(start.body);
    assert.deepEqual(await waitForRun(db.sql, runId, { flow: analyzeWebsite, timeoutMs: 30_000 }), {
      summary: "page of https://example.com".length,
    });
    const [listed] = shellCommands(runs.body);
    assert.match(
      await sluice(db, listed),
      new RegExp(`^${runId} +analyze_website_v2 +completed`, "m"),
    );

    // Step 5: pgflow still has its run; its worker finishes it; then nothing is in flight.
    const inFlight = async () =>
      [...await db.sql.unsafe(drained.body)].map((
        row,
      ) => [row.flow_slug, String(row.started_runs)]);
    assert.deepEqual(await inFlight(), [["analyze_website", "1"]]);
    assert.equal(await completePgflowTask(db, pgflowWorker, { content: "page" }), "website");
    assert.equal(await completePgflowTask(db, pgflowWorker, 4), "summary");
    await waitUntil(
      async () =>
        (await db.sql`select status from pgflow.runs where run_id = ${pgflowRun.run_id}::uuid`)[0]
          .status === "completed",
      "the pgflow run completed",
    );
    assert.deepEqual(await inFlight(), []);

    // Step 6: pgflow's cron jobs, queues and schema go; its history stays; sluice is untouched.
    await db.sql.unsafe(remove.body);
    const left = await db.sql`
      select (select count(*)::int from cron.job) as jobs,
        (select count(*)::int from public.pgflow_runs_archive) as archived,
        exists (select 1 from pg_namespace where nspname = 'pgflow') as pgflow_schema,
        (select array_agg(queue_name order by queue_name) from pgmq.list_queues()) as queues`;
    assert.deepEqual({ ...left[0] }, {
      jobs: 4 - 3,
      archived: 1,
      pgflow_schema: false,
      queues: ["analyze_website_v2"],
    });
    const [{ start_flow: next }] = await db.sql.unsafe(start.body);
    assert.ok(await waitForRun(db.sql, next, { timeoutMs: 30_000 }));
  },
});
