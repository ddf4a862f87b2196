// Step workers end to end: one worker per step of a step-queued flow, a missing step worker
// (durable queueing, coverage), unexpected work on a step queue, queue ownership at startup.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { startWorker, StepSlugError } from "../../src/worker/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { silentDatabase, testWorker, uniqueSlug, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

/** `a -> b -> c`; records which step ran where. */
function chain(slug: string) {
  const ran: string[] = [];
  const flow = withStepQueues(
    new Flow<{ n: number }>({ slug, timeout: 10 })
      .step({ slug: "a" }, (input, ctx) => {
        ran.push(`a:${ctx.runId}`);
        return input.n + 1;
      })
      .step({ slug: "b", dependsOn: ["a"] }, (deps, ctx) => {
        ran.push(`b:${ctx.runId}`);
        return deps.a * 10;
      })
      .step({ slug: "c", dependsOn: ["b"] }, (deps, ctx) => {
        ran.push(`c:${ctx.runId}`);
        return `n=${deps.b}`;
      }),
  );
  return { flow, ran };
}

async function counts(db: TestDatabase) {
  const [row] = await db.sql`
    select (select count(*)::int from sluice.flows) as flows,
      (select count(*)::int from sluice.queues) as queues,
      (select count(*)::int from sluice.worker_functions) as functions,
      (select count(*)::int from sluice.workers) as workers,
      (select count(*)::int from pgmq.meta) as pgmq_queues`;
  return { ...row };
}

async function coverage(db: TestDatabase, flowSlug: string) {
  const rows = await db.sql`
    select step_slug, queue_name, live_workers, queued_tasks, missing_worker
    from sluice.route_coverage where flow_slug = ${flowSlug} order by step_index`;
  return rows.map((row) => ({ ...row }));
}

Deno.test("a step worker checks its stepSlug before touching the database, listing the valid slugs", async () => {
  const { flow } = chain("checked");
  // The connection string leads to a port that counts connections: no refusal opens one.
  using database = silentDatabase();

  await assert.rejects(
    // @ts-expect-error a step-queued flow's worker needs a stepSlug
    startWorker(flow, { connectionString: database.url }),
    (error: unknown) => {
      assert.ok(error instanceof StepSlugError);
      assert.ok(error instanceof TypeError);
      assert.equal(error.name, "StepSlugError");
      assert.equal(error.reason, "missing");
      assert.equal(error.flowSlug, "checked");
      assert.equal(error.stepSlug, undefined);
      assert.deepEqual(error.stepSlugs, ["a", "b", "c"]);
      assert.match(error.message, /give stepSlug, one of "a", "b", "c"$/);
      return true;
    },
  );
  await assert.rejects(
    // @ts-expect-error "d" is not a step of the flow
    startWorker(flow, { connectionString: database.url, stepSlug: "d" }),
    (error: unknown) => {
      assert.ok(error instanceof StepSlugError);
      assert.equal(error.reason, "unknown");
      assert.equal(error.stepSlug, "d");
      assert.equal(
        error.message,
        'Cannot start worker for flow "checked": stepSlug "d" is not a step of the flow; ' +
          'give one of "a", "b", "c"',
      );
      return true;
    },
  );
  await assert.rejects(
    // @ts-expect-error a plain flow's worker runs every step
    startWorker(flow.flow, { connectionString: database.url, stepSlug: "a" }),
    (error: unknown) => error instanceof StepSlugError && error.reason === "not_step_queued",
  );
  assert.equal(database.accepted(), 0, "the worker connected to its database");
});

Deno.test("a 3-step step-queued flow completes with one worker per step, each on its own queue", async () => {
  await using db = await freshDatabase();
  const slug = uniqueSlug("steps");
  const { flow, ran } = chain(slug);
  await using a = await testWorker(flow, db, { stepSlug: "a" });
  await using b = await testWorker(flow, db, { stepSlug: "b" });
  await using c = await testWorker(flow, db, { stepSlug: "c" });

  const kebab = slug.replaceAll("_", "-");
  assert.deepEqual(
    [a, b, c].map((w) => [w.stepSlug, w.queueName, w.functionName]),
    ["a", "b", "c"].map((step) => [step, `${slug}__${step}`, `${kebab}--${step}`]),
    "each polls its step's queue; the function name is the one gen:functions writes",
  );
  const runs = await Promise.all([1, 2, 3].map((n) => startFlow(db.sql, flow, { n })));
  for (const [i, runId] of runs.entries()) {
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
      c: `n=${(i + 2) * 10}`,
    });
  }

  const tasks = await db.sql`
    select step_slug, queue_name, array_agg(distinct last_worker_id::text) as workers
    from sluice.step_tasks where flow_slug = ${slug} group by step_slug, queue_name
    order by step_slug`;
  assert.deepEqual(
    tasks.map((t) => [t.step_slug, t.queue_name, t.workers]),
    [["a", a], ["b", b], ["c", c]].map(([step, worker]) => [
      step,
      `${slug}__${step}`,
      [(worker as { workerId: string }).workerId],
    ]),
    "every task was claimed from its step's queue by that step's worker",
  );
  const rows = await db.sql`
    select queue_name, step_slug, function_name from sluice.workers order by step_slug`;
  assert.deepEqual(
    rows.map((row) => [row.queue_name, row.step_slug, row.function_name]),
    ["a", "b", "c"].map((step) => [`${slug}__${step}`, step, `${kebab}--${step}`]),
  );
  assert.equal(ran.length, 9);
  assert.deepEqual(
    (await coverage(db, slug)).map((row) => [row.step_slug, row.missing_worker]),
    [["a", false], ["b", false], ["c", false]],
  );
});

Deno.test("without the middle step's worker its tasks wait on its queue, coverage flags it, and its worker completes the runs", async () => {
  await using db = await freshDatabase();
  const slug = uniqueSlug("gap");
  const { flow, ran } = chain(slug);
  await using _a = await testWorker(flow, db, { stepSlug: "a" });
  await using _c = await testWorker(flow, db, { stepSlug: "c" });

  const runs = await Promise.all([1, 2, 3].map((n) => startFlow(db.sql, flow, { n })));
  await waitUntil(async () => {
    const [row] = await db.sql`
      select count(*)::int as n from sluice.step_tasks
      where flow_slug = ${slug} and step_slug = 'b' and status = 'queued'`;
    return row.n === 3;
  }, "the b tasks to be queued");
  // By state, not by waiting: no c task exists before b completes, and b's messages are unread
  // (read_ct 0), so no worker took them.

  assert.deepEqual(ran.filter((entry) => !entry.startsWith("a:")), [], "nothing ran past a");
  const states = await db.sql`
    select t.step_slug, t.status, t.queue_name, t.message_id is not null as has_message
    from sluice.step_tasks t where t.flow_slug = ${slug} order by t.step_slug, t.run_id`;
  assert.deepEqual(
    states.map((t) => `${t.step_slug} ${t.status} ${t.queue_name}`),
    [
      ...runs.map(() => `a completed ${slug}__a`),
      ...runs.map(() => `b queued ${slug}__b`),
    ],
  );
  const [queue] = await db.sql.unsafe(
    `select count(*)::int as messages, count(*) filter (where vt <= clock_timestamp())::int as visible,
       count(*) filter (where read_ct = 0)::int as unread
     from pgmq.q_${slug}__b`,
  );
  assert.deepEqual(
    { ...queue },
    { messages: 3, visible: 3, unread: 3 },
    "the messages wait, visible and unread",
  );
  const [run] = await db.sql`
    select count(*)::int as started from sluice.runs
    where flow_slug = ${slug} and status = 'started'`;
  assert.equal(run.started, 3);
  assert.deepEqual(await coverage(db, slug), [
    {
      step_slug: "a",
      queue_name: `${slug}__a`,
      live_workers: 1,
      queued_tasks: 0,
      missing_worker: false,
    },
    {
      step_slug: "b",
      queue_name: `${slug}__b`,
      live_workers: 0,
      queued_tasks: 3,
      missing_worker: true,
    },
    {
      step_slug: "c",
      queue_name: `${slug}__c`,
      live_workers: 1,
      queued_tasks: 0,
      missing_worker: false,
    },
  ]);

  await using _b = await testWorker(flow, db, { stepSlug: "b" });
  for (const [i, runId] of runs.entries()) {
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(10_000), flow }), {
      c: `n=${(i + 2) * 10}`,
    });
  }
  assert.deepEqual(
    (await coverage(db, slug)).map((row) => [row.step_slug, row.queued_tasks, row.missing_worker]),
    [["a", 0, false], ["b", 0, false], ["c", 0, false]],
  );
});

Deno.test("a step worker handed another step's message (copied onto its queue) stops fatally, claiming nothing", async () => {
  await using db = await freshDatabase();
  const slug = uniqueSlug("stray");
  const { flow, ran } = chain(slug);
  await using b = await testWorker(flow, db, { stepSlug: "b" });

  // No worker for a: its task waits; a copy of its message lands on b's queue.
  const runId = await startFlow(db.sql, flow, { n: 1 });
  const [original] = await db.sql.unsafe(
    `select msg_id::text as msg_id, message from pgmq.q_${slug}__a`,
  );
  const [copy] = await db.sql`
    select pgmq.send(${`${slug}__b`}, ${db.sql.json(original.message)})::text as msg_id`;

  await b.done;
  assert.equal(b.status, "fatal");
  const fatal = b.logs.find("fatal");
  assert.equal(fatal.length, 1);
  assert.deepEqual(fatal[0].fields.fatal, [{ message_id: copy.msg_id, class: "wrong_queue" }]);
  assert.equal(fatal[0].fields.queue, `${slug}__b`);
  assert.deepEqual(ran, []);

  const [fn] = await db.sql`
    select restart_paused_at is not null as paused, pause_reason from sluice.worker_functions
    where function_name = ${b.functionName}`;
  assert.equal(fn.paused, true);
  assert.match(fn.pause_reason, new RegExp(`message ${copy.msg_id} \\(wrong_queue\\)`));
  const [task] = await db.sql`
    select status, attempts_count, queue_name, message_id::text as message_id
    from sluice.step_tasks where run_id = ${runId} and step_slug = 'a'`;
  assert.deepEqual({ ...task }, {
    status: "queued",
    attempts_count: 0,
    queue_name: `${slug}__a`,
    message_id: original.msg_id,
  }, "the real task is untouched");
  const [left] = await db.sql.unsafe(
    `select vt <= clock_timestamp() as visible from pgmq.q_${slug}__b where msg_id = $1`,
    [copy.msg_id],
  );
  assert.equal(left.visible, true, "the copy is left visible for an operator");
});

Deno.test("a step worker refuses to start on a hand-made PGMQ queue with its generated name, creating nothing", async () => {
  await using db = await freshDatabase();
  const { flow } = chain("owned");
  await db.sql`select pgmq.create('owned__b')`;

  await assert.rejects(
    testWorker(flow, db, { stepSlug: "a" }),
    /Cannot compile flow "owned": queue "owned__b" of step "b" already exists in PGMQ \(as "owned__b"\) but no sluice flow owns it; sluice never adopts a queue silently/,
  );
  assert.deepEqual(await counts(db), {
    flows: 0,
    queues: 0,
    functions: 0,
    workers: 0,
    pgmq_queues: 1,
  });
  const queues = await db.sql`select queue_name from pgmq.meta`;
  assert.deepEqual(queues.map((q) => q.queue_name), ["owned__b"], "no step queue was created");
});
