import assert from "node:assert/strict";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import {
  compile,
  compileFlow,
  completeTask,
  definition,
  failTask,
  json,
  readAndClaim,
  registerWorker,
  type Sql,
} from "./_fixtures.ts";

type Event = Record<string, unknown>;

/** A stand-in for Supabase's realtime.send (same signature) that records every call. */
async function installRealtimeStandIn(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create schema realtime;
    create table realtime.sent (
      id bigserial primary key, payload jsonb, event text, topic text, private boolean
    );
    create function realtime.send(payload jsonb, event text, topic text, private boolean default true)
    returns void language sql
    as $$ insert into realtime.sent (payload, event, topic, private) values ($1, $2, $3, $4) $$;
  `);
}

/** The recorded realtime.send calls of one topic, in call order. */
async function realtimeCalls(sql: Sql, topic: string) {
  return await sql<{ payload: Event; event: string; topic: string; private: boolean }[]>`
    select payload, event, topic, private from realtime.sent where topic = ${topic} order by id`;
}

/** LISTENs on a run's channel (on a connection of its own) and collects parsed events. */
async function listenToRun(db: TestDatabase, runId: string): Promise<Event[]> {
  const events: Event[] = [];
  const channel = `sluice_run_${runId.replaceAll("-", "")}`;
  await db.connect(1).listen(channel, (payload) => events.push(JSON.parse(payload)));
  return events;
}

/** Events without their timestamps (each must have one). */
function withoutAt(events: readonly Event[]): Event[] {
  return events.map(({ at, ...rest }) => {
    assert.equal(typeof at, "string", `event ${JSON.stringify(rest)} has no timestamp`);
    return rest;
  });
}

function isTerminal(event: Event): boolean {
  return event.type === "run:completed" || event.type === "run:failed";
}

/** Claims the run's visible tasks of one step and completes or fails each, one per transaction. */
async function settle(
  sql: Sql,
  queue: string,
  flow: string,
  workerId: string,
  act: (task: { step_slug: string; task_index: number; input: unknown }) =>
    | { output: unknown }
    | { error: string },
): Promise<number> {
  const tasks = await readAndClaim(sql, queue, workerId, flow);
  tasks.sort((a, b) => a.step_slug.localeCompare(b.step_slug) || a.task_index - b.task_index);
  for (const task of tasks) {
    const outcome = act(task);
    if ("output" in outcome) await completeTask(sql, task, outcome.output);
    else await failTask(sql, task, outcome.error, 0);
  }
  return tasks.length;
}

const MIXED_FLOW = {
  slug: "evts",
  progressInterval: 0,
  steps: [
    { slug: "list" },
    { slug: "premium", if: { tier: "gold" } },
    { slug: "double", type: "map" as const, deps: ["list"], mapSource: "list" },
    { slug: "flaky", deps: ["double"], maxAttempts: 2 },
  ],
};

const MIXED_EVENTS = (runId: string): Event[] => [
  { type: "run:started", runId, flowSlug: "evts" },
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
  { type: "run:completed", runId, flowSlug: "evts", output: { flaky: "ok" } },
];

/** Drives the one run of MIXED_FLOW: the map's tasks one by one, flaky failing its first attempt. */
async function driveMixedRun(sql: Sql): Promise<void> {
  const workerId = await registerWorker(sql, "evts", "evts");
  let flakyAttempts = 0;
  const act = (task: { step_slug: string; input: unknown }) => {
    if (task.step_slug === "list") return { output: [1, 2, 3] };
    if (task.step_slug === "double") return { output: (task.input as number) * 2 };
    flakyAttempts++;
    return flakyAttempts === 1 ? { error: "flaky once" } : { output: "ok" };
  };
  for (let round = 0; round < 10; round++) {
    if (await settle(sql, "evts", "evts", workerId, act) === 0) break;
  }
  assert.equal(flakyAttempts, 2, "flaky ran twice: one retried failure, one success");
}

Deno.test("a run with a map, a skipped step and a retried failure sends exactly its events, in order, over NOTIFY and realtime.send", async () => {
  await using db = await freshDatabase();
  await installRealtimeStandIn(db.sql);
  await compileFlow(db.sql, MIXED_FLOW);
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);

  await db.sql`select sluice.start_flow('evts', ${
    json(db.sql, { tier: "silver" })
  }::jsonb, ${runId})`;
  await driveMixedRun(db.sql);
  await waitUntil(() => notified.some(isTerminal), "the terminal event over NOTIFY");

  assert.deepEqual(withoutAt(notified), MIXED_EVENTS(runId));
  const calls = await realtimeCalls(db.sql, `sluice:run:${runId}`);
  assert.deepEqual(withoutAt(calls.map((c) => c.payload)), MIXED_EVENTS(runId));
  assert.deepEqual(calls.map((c) => c.event), MIXED_EVENTS(runId).map((e) => e.type));
  assert.ok(calls.every((c) => c.private), "every broadcast goes to a private topic");
  // Both transports carry one payload: the realtime payloads are the notified ones, byte for byte.
  assert.deepEqual(calls.map((c) => c.payload), notified);
});

Deno.test("sluice.run_events() replays a run's state as the events that led to it, in order", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, MIXED_FLOW);
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);
  await db.sql`select sluice.start_flow('evts', ${
    json(db.sql, { tier: "silver" })
  }::jsonb, ${runId})`;
  await driveMixedRun(db.sql);
  await waitUntil(() => notified.some(isTerminal), "the terminal event over NOTIFY");

  const [{ events }] = await db.sql<
    { events: Event[] }[]
  >`select sluice.run_events(${runId}) as events`;
  // A finished step's replay has no progress: its terminal event says more.
  assert.deepEqual(events, notified.filter((e) => e.type !== "step:progress"));
  const [{ none }] = await db.sql`select sluice.run_events(gen_random_uuid()) as none`;
  assert.equal(none, null);
});

Deno.test("a failed run's terminal event comes after its failed and cancelled steps, naming the step", async () => {
  await using db = await freshDatabase();
  await installRealtimeStandIn(db.sql);
  await compileFlow(db.sql, {
    slug: "boom",
    maxAttempts: 1,
    steps: [{ slug: "bad" }, { slug: "good" }],
  });
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);
  await db.sql`select sluice.start_flow('boom', '{}'::jsonb, ${runId})`;
  const workerId = await registerWorker(db.sql, "boom", "boom");
  const tasks = await readAndClaim(db.sql, "boom", workerId, "boom");
  await failTask(db.sql, tasks.find((t) => t.step_slug === "bad")!, "it broke");
  await waitUntil(() => notified.some(isTerminal), "the terminal event over NOTIFY");

  const error = 'step "bad" task 0 failed: it broke';
  const expected = [
    { type: "run:started", runId, flowSlug: "boom" },
    { type: "step:started", runId, stepSlug: "bad", tasks: 1 },
    { type: "step:started", runId, stepSlug: "good", tasks: 1 },
    { type: "step:failed", runId, stepSlug: "bad", errorMessage: error },
    { type: "step:cancelled", runId, stepSlug: "good" },
    { type: "run:failed", runId, flowSlug: "boom", stepSlug: "bad", errorMessage: error },
  ];
  assert.deepEqual(withoutAt(notified), expected);
  const calls = await realtimeCalls(db.sql, `sluice:run:${runId}`);
  assert.deepEqual(withoutAt(calls.map((c) => c.payload)), expected);
});

Deno.test("an event too large for NOTIFY leaves its output out and says so; the replay has it", async () => {
  await using db = await freshDatabase();
  await installRealtimeStandIn(db.sql);
  await compileFlow(db.sql, { slug: "big", steps: [{ slug: "blob" }] });
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);
  await db.sql`select sluice.start_flow('big', '{}'::jsonb, ${runId})`;
  const workerId = await registerWorker(db.sql, "big", "big");
  const [task] = await readAndClaim(db.sql, "big", workerId, "big");
  const blob = "x".repeat(10_000);
  await completeTask(db.sql, task, blob);
  await waitUntil(() => notified.some(isTerminal), "the terminal event over NOTIFY");

  assert.deepEqual(withoutAt(notified.slice(2)), [
    { type: "step:completed", runId, stepSlug: "blob", omitted: ["output"] },
    { type: "run:completed", runId, flowSlug: "big", omitted: ["output"] },
  ]);
  const calls = await realtimeCalls(db.sql, `sluice:run:${runId}`);
  assert.deepEqual(calls.map((c) => c.payload), notified);
  const [{ events }] = await db.sql<
    { events: Event[] }[]
  >`select sluice.run_events(${runId}) as events`;
  assert.equal(events.at(-1)!.output && (events.at(-1)!.output as { blob: string }).blob, blob);
});

Deno.test("a flow with events off sends none, and a restart with events on turns them on for running runs", async () => {
  await using db = await freshDatabase();
  await installRealtimeStandIn(db.sql);
  const spec = {
    slug: "quiet",
    events: false,
    steps: [{ slug: "one" }, { slug: "two", deps: ["one"] }],
  };
  await compileFlow(db.sql, spec);
  const quietRun = crypto.randomUUID();
  const notified = await listenToRun(db, quietRun);
  await db.sql`select sluice.start_flow('quiet', '{}'::jsonb, ${quietRun})`;
  const workerId = await registerWorker(db.sql, "quiet", "quiet");
  await settle(db.sql, "quiet", "quiet", workerId, () => ({ output: 1 }));

  // Runtime options are refreshed by a verified startup: events on, from the next change on.
  const verified = await compile(db.sql, definition({ ...spec, events: true }));
  assert.equal(verified.outcome, "verified");
  await settle(db.sql, "quiet", "quiet", workerId, () => ({ output: 2 }));
  await waitUntil(() => notified.some(isTerminal), "the terminal event over NOTIFY");

  assert.deepEqual(withoutAt(notified), [
    { type: "step:completed", runId: quietRun, stepSlug: "two", output: 2 },
    { type: "run:completed", runId: quietRun, flowSlug: "quiet", output: { two: 2 } },
  ]);
  assert.equal((await realtimeCalls(db.sql, `sluice:run:${quietRun}`)).length, 2);
});

Deno.test("progress events are throttled to one per interval per step", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "slowprog",
    progressInterval: 3600,
    steps: [{ slug: "each", type: "map" }],
  });
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);
  await db.sql`select sluice.start_flow('slowprog', '[1, 2, 3, 4]'::jsonb, ${runId})`;
  const workerId = await registerWorker(db.sql, "slowprog", "slowprog");
  await settle(db.sql, "slowprog", "slowprog", workerId, () => ({ output: 0 }));
  await waitUntil(() => notified.some(isTerminal), "the terminal event over NOTIFY");
  assert.deepEqual(notified.map((e) => e.type), [
    "run:started",
    "step:started",
    "step:completed",
    "run:completed",
  ]);
});

Deno.test("ensure_flow_compiled() rejects bad event options naming the value, and writes nothing", async () => {
  await using db = await freshDatabase();
  const bad = definition({ slug: "badev", steps: [{ slug: "a" }] });
  bad.options.events = "yes" as unknown as boolean;
  await assert.rejects(
    compile(db.sql, bad),
    /options\.events of flow "badev" must be true, false or null, got "yes"/,
  );
  const negative = definition({ slug: "badev", progressInterval: -1, steps: [{ slug: "a" }] });
  await assert.rejects(
    compile(db.sql, negative),
    /options\.progress_interval of flow "badev" must be a whole number >= 0, got -1/,
  );
  const [{ n }] = await db
    .sql`select count(*)::int as n from sluice.flows where flow_slug = 'badev'`;
  assert.equal(n, 0);
});

Deno.test("sluice.start_run() and read_run_events() serve only a role granted EXECUTE on them, which reaches nothing else", async () => {
  await using db = await freshDatabase();
  await installRealtimeStandIn(db.sql);
  await compileFlow(db.sql, MIXED_FLOW);
  await db.sql.unsafe(`
    do $$ begin
      if not exists (select 1 from pg_roles where rolname = 'sluice_test_browser') then
        create role sluice_test_browser nologin;
      end if;
    end $$;
    grant usage on schema sluice to sluice_test_browser`);
  const asBrowser = <T>(statement: string) =>
    db.sql.begin(async (tx) => {
      await tx.unsafe("set local role sluice_test_browser");
      return await tx.unsafe(statement) as unknown as T;
    });
  const denied = (error: { code?: string }) => error.code === "42501";

  for (const signature of ["sluice.start_run(text, jsonb)", "sluice.read_run_events(uuid)"]) {
    for (const role of ["sluice_test_browser", "public"]) {
      const [{ allowed }] = await db.sql`
        select has_function_privilege(${role}, ${signature}, 'execute') as allowed`;
      assert.equal(allowed, false, `${role} may execute ${signature} before any grant`);
    }
  }
  await assert.rejects(asBrowser(`select sluice.start_run('evts', '{}')`), denied);

  await db.sql.unsafe(`
    grant execute on function sluice.start_run(text, jsonb), sluice.read_run_events(uuid)
    to sluice_test_browser`);
  const [{ run_id }] = await asBrowser<{ run_id: string }[]>(
    `select sluice.start_run('evts', '{"tier": "silver"}') as run_id`,
  );
  const [{ events }] = await asBrowser<{ events: Event[] }[]>(
    `select sluice.read_run_events('${run_id}') as events`,
  );
  assert.deepEqual(withoutAt(events), MIXED_EVENTS(run_id).slice(0, 3));
  assert.deepEqual(
    withoutAt((await realtimeCalls(db.sql, `sluice:run:${run_id}`)).map((c) => c.payload)),
    MIXED_EVENTS(run_id).slice(0, 3),
  );
  for (
    const statement of [
      "select * from sluice.runs",
      `select sluice.start_flow('evts', '{}')`,
      `select sluice.run_events('${run_id}')`,
      "select * from pgmq.meta",
    ]
  ) {
    await assert.rejects(asBrowser(statement), denied, statement);
  }
});
