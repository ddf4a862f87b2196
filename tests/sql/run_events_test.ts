import assert from "node:assert/strict";
import { watchRun } from "../../src/client/watch_run.ts";
import { isTerminalRunEvent, runChannel } from "../../src/events/run_event.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import {
  ensureRole,
  type Event,
  installRealtimeSend,
  listenAs,
  mixedEvents,
  mixedFlow,
  MixedRunDriver,
  realtimeCalls,
  withoutAt,
  withoutProgress,
} from "../_run_events.ts";
import { waitUntil, within } from "../_support.ts";
import { waitUntilBlocked } from "../pgmq/_pgmq.ts";
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

/** LISTENs on a run's channel (on a connection of its own) and collects parsed events. */
async function listenToRun(db: TestDatabase, runId: string): Promise<Event[]> {
  const events: Event[] = [];
  const channel = runChannel(runId);
  await db.connect(1).listen(channel, (payload) => events.push(JSON.parse(payload)));
  return events;
}

/**
 * What NOTIFY carries of an event: ids, states, times and counts; its output, error message, wait
 * key, cancel reason and roles left out and named under "omitted" (a LISTEN needs no privilege).
 */
function notifiedForm(event: Event): Event {
  const left = ["output", "errorMessage", "key", "reason", "cancelledBy", "retriedBy"]
    .filter((field) => field in event && (field !== "reason" || event.type === "run:cancelled"));
  const rest: Record<string, unknown> = { ...event };
  for (const field of left) delete rest[field];
  return (left.length === 0 ? rest : { ...rest, omitted: left }) as Event;
}

/** Claims the visible tasks of a queue and completes each with `output`, one per transaction. */
async function settle(
  sql: Sql,
  flow: string,
  workerId: string,
  output: (task: { input: unknown }) => unknown,
): Promise<number> {
  const tasks = await readAndClaim(sql, flow, workerId, flow);
  tasks.sort((a, b) => a.step_slug.localeCompare(b.step_slug) || a.task_index - b.task_index);
  for (const task of tasks) await completeTask(sql, task, output(task));
  return tasks.length;
}

/** Runs the mixed flow "evts" to its end while listening; returns the run and what NOTIFY said. */
async function listenToMixedRun(db: TestDatabase) {
  await compileFlow(db.sql, mixedFlow("evts"));
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);
  await db.sql`select sluice.start_flow('evts', ${
    json(db.sql, { tier: "silver" })
  }::jsonb, ${runId})`;
  await new MixedRunDriver(db.sql, "evts").finish();
  await waitUntil(() => notified.some(isTerminalRunEvent), "the terminal event over NOTIFY");
  return { runId, notified };
}

Deno.test("a run with a map, a skipped step and a retried failure sends exactly its events, in order, over NOTIFY and realtime.send", async () => {
  await using db = await freshDatabase();
  await installRealtimeSend(db.sql);
  const { runId, notified } = await listenToMixedRun(db);

  assert.deepEqual(withoutAt(notified), mixedEvents(runId, "evts").map(notifiedForm));
  const calls = await realtimeCalls(db.sql, `sluice:run:${runId}`);
  assert.deepEqual(withoutAt(calls.map((c) => c.payload)), mixedEvents(runId, "evts"));
  assert.deepEqual(calls.map((c) => c.event), mixedEvents(runId, "evts").map((e) => e.type));
  assert.ok(calls.every((c) => c.private), "every broadcast goes to a private topic");
  // The same events on both transports: NOTIFY's are the broadcasts without outputs and errors.
  assert.deepEqual(calls.map((c) => notifiedForm(c.payload)), notified);
});

Deno.test("sluice.run_events() replays a run's state as the events that led to it, in order", async () => {
  await using db = await freshDatabase();
  const { runId, notified } = await listenToMixedRun(db);

  const [{ events }] = await db.sql<
    { events: Event[] }[]
  >`select sluice.run_events(${runId}) as events`;
  // A finished step's replay has no progress: its terminal event says more. It has the outputs.
  assert.deepEqual(withoutAt(events), withoutProgress(mixedEvents(runId, "evts")));
  assert.deepEqual(events.map(notifiedForm), notified.filter((e) => e.type !== "step:progress"));
  const [{ none }] = await db.sql`select sluice.run_events(gen_random_uuid()) as none`;
  assert.equal(none, null);
});

Deno.test("a failed run's terminal event comes after its failed and cancelled steps, naming the step", async () => {
  await using db = await freshDatabase();
  await installRealtimeSend(db.sql);
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
  await waitUntil(() => notified.some(isTerminalRunEvent), "the terminal event over NOTIFY");

  const error = 'step "bad" task 0 failed: it broke';
  const expected = [
    { type: "run:started", runId, flowSlug: "boom" },
    { type: "step:started", runId, stepSlug: "bad", tasks: 1 },
    { type: "step:started", runId, stepSlug: "good", tasks: 1 },
    { type: "step:failed", runId, stepSlug: "bad", errorMessage: error },
    { type: "step:cancelled", runId, stepSlug: "good" },
    { type: "run:failed", runId, flowSlug: "boom", stepSlug: "bad", errorMessage: error },
  ];
  assert.deepEqual(withoutAt(notified), expected.map(notifiedForm));
  const calls = await realtimeCalls(db.sql, `sluice:run:${runId}`);
  assert.deepEqual(withoutAt(calls.map((c) => c.payload)), expected);
});

Deno.test("an event too large for NOTIFY leaves its output out and says so; the replay has it", async () => {
  await using db = await freshDatabase();
  await installRealtimeSend(db.sql);
  await compileFlow(db.sql, { slug: "big", steps: [{ slug: "blob" }] });
  const runId = crypto.randomUUID();
  const notified = await listenToRun(db, runId);
  await db.sql`select sluice.start_flow('big', '{}'::jsonb, ${runId})`;
  const workerId = await registerWorker(db.sql, "big", "big");
  const [task] = await readAndClaim(db.sql, "big", workerId, "big");
  const blob = "x".repeat(10_000);
  await completeTask(db.sql, task, blob);
  await waitUntil(() => notified.some(isTerminalRunEvent), "the terminal event over NOTIFY");

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
  await installRealtimeSend(db.sql);
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
  await settle(db.sql, "quiet", workerId, () => 1);

  // Runtime options are refreshed by a verified startup: events on, from the next change on.
  const verified = await compile(db.sql, definition({ ...spec, events: true }));
  assert.equal(verified.outcome, "verified");
  await settle(db.sql, "quiet", workerId, () => 2);
  await waitUntil(() => notified.some(isTerminalRunEvent), "the terminal event over NOTIFY");

  assert.deepEqual(withoutAt(notified), [
    { type: "step:completed", runId: quietRun, stepSlug: "two", omitted: ["output"] },
    { type: "run:completed", runId: quietRun, flowSlug: "quiet", omitted: ["output"] },
  ]);
  assert.equal((await realtimeCalls(db.sql, `sluice:run:${quietRun}`)).length, 2);
});

Deno.test("a step sends one progress event per interval: none sooner, one once it has passed", async () => {
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
  const tasks = await readAndClaim(db.sql, "slowprog", workerId, "slowprog");
  assert.equal(tasks.length, 4);
  // The throttle's clock is the stored progress_sent_at (or started_at): moving it an interval
  // back stands for the interval having passed, without waiting an hour.
  const intervalPassed = () =>
    db.sql`
      update sluice.step_states
      set started_at = started_at - interval '3600 seconds',
        progress_sent_at = progress_sent_at - interval '3600 seconds'
      where run_id = ${runId}`;
  const progress = () => notified.filter((e) => e.type === "step:progress");

  await completeTask(db.sql, tasks[0], 0); // within the interval of the start: none
  await intervalPassed();
  await completeTask(db.sql, tasks[1], 0); // an interval later: one
  await waitUntil(() => progress().length > 0, "the first progress event");
  await completeTask(db.sql, tasks[2], 0); // within the interval of that one: none
  await completeTask(db.sql, tasks[3], 0); // completes the step: none
  await waitUntil(() => notified.some(isTerminalRunEvent), "the terminal event over NOTIFY");
  assert.deepEqual(notified.map((e) => e.type), [
    "run:started",
    "step:started",
    "step:progress",
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
  await installRealtimeSend(db.sql);
  await compileFlow(db.sql, mixedFlow("evts"));
  await ensureRole(db.sql, "sluice_test_browser");
  await db.sql`grant usage on schema sluice to sluice_test_browser`;
  const asBrowser = <T>(statement: string) =>
    db.sql.begin(async (tx) => {
      await tx.unsafe("set local role sluice_test_browser");
      return await tx.unsafe(statement) as unknown as T;
    });
  const denied = (error: { code?: string }) => error.code === "42501";

  for (
    const signature of [
      "sluice.start_run(text, jsonb)",
      "sluice.start_run(text, jsonb, jsonb)",
      "sluice.read_run_events(uuid)",
    ]
  ) {
    for (const role of ["sluice_test_browser", "public"]) {
      const [{ allowed }] = await db.sql`
        select has_function_privilege(${role}, ${signature}, 'execute') as allowed`;
      assert.equal(allowed, false, `${role} may execute ${signature} before any grant`);
    }
  }
  await assert.rejects(asBrowser(`select sluice.start_run('evts', '{}')`), denied);
  await assert.rejects(
    asBrowser(`select sluice.start_run('evts', '{}', '{"idempotency_key": "k"}')`),
    denied,
  );

  await db.sql.unsafe(`
    grant execute on function sluice.start_run(text, jsonb), sluice.start_run(text, jsonb, jsonb),
      sluice.read_run_events(uuid)
    to sluice_test_browser`);
  const [{ run_id }] = await asBrowser<{ run_id: string }[]>(
    `select sluice.start_run('evts', '{"tier": "silver"}') as run_id`,
  );
  const [{ events }] = await asBrowser<{ events: Event[] }[]>(
    `select sluice.read_run_events('${run_id}') as events`,
  );
  assert.deepEqual(withoutAt(events), mixedEvents(run_id, "evts").slice(0, 3));
  assert.deepEqual(
    withoutAt((await realtimeCalls(db.sql, `sluice:run:${run_id}`)).map((c) => c.payload)),
    mixedEvents(run_id, "evts").slice(0, 3),
  );
  for (
    const statement of [
      "select * from sluice.runs",
      `select sluice.start_flow('evts', '{}')`,
      `select sluice.run_events('${run_id}')`,
      "select * from pgmq.meta",
      "select * from sluice.idempotency_keys",
    ]
  ) {
    await assert.rejects(asBrowser(statement), denied, statement);
  }
});

Deno.test("ensureRole() succeeds when another session creates the same role at the same time", async () => {
  await using db = await freshDatabase();
  const role = `sluice_test_race_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const first = db.connect(1);
  const second = db.connect(1);
  const [{ pid }] = await second`select pg_backend_pid() as pid`;
  try {
    // Another test file's session has created the role but not committed: a check sees no role.
    await first`begin`;
    await first.unsafe(`create role ${role} nologin`);
    const racing = ensureRole(second, role);
    await waitUntilBlocked(db.sql, pid);
    await first`commit`;
    await racing;
    const [{ n }] = await db.sql`select count(*)::int as n from pg_roles where rolname = ${role}`;
    assert.equal(n, 1);
  } finally {
    await db.sql.unsafe(`drop role if exists ${role}`);
  }
});

/** The "boom2" flow: "good" completes with a secret output, then "bad" fails with a secret error. */
async function secretRun(db: TestDatabase, runId: string, error: string): Promise<void> {
  await db.sql`select sluice.start_flow('boom2', '{}'::jsonb, ${runId}) where not exists (
    select from sluice.runs where run_id = ${runId})`;
  const workerId = await registerWorker(db.sql, "boom2", "boom2");
  const tasks = await readAndClaim(db.sql, "boom2", workerId, "boom2");
  await completeTask(db.sql, tasks.find((t) => t.step_slug === "good")!, "secret-output");
  await failTask(db.sql, tasks.find((t) => t.step_slug === "bad")!, error);
}

Deno.test("a role with no privilege on sluice LISTENs on a run's channel and reads no output or error text; watchRun() as a granted role gets them", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "boom2",
    maxAttempts: 1,
    steps: [{ slug: "good" }, { slug: "bad", deps: [] }],
  });
  const runId = crypto.randomUUID();
  await using nobody = await listenAs(db.sql, db.url, "sluice_test_nobody", runId);
  const { payloads } = nobody;
  await db.sql`select sluice.start_flow('boom2', '{}'::jsonb, ${runId})`;
  const watcher = (async () => {
    const events: Record<string, unknown>[] = [];
    for await (const event of watchRun(db.sql, runId)) events.push({ ...event });
    return events;
  })();
  await waitUntil(async () => {
    const [{ n }] = await db.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where query like ${`%listen ${runChannel(runId)}%`}`;
    return n === 2;
  }, "both sessions listening");
  await secretRun(db, runId, "secret-error");
  const events = await within(watcher, "the watch's terminal event", 5_000);
  await waitUntil(
    () => payloads.some((p) => isTerminalRunEvent(JSON.parse(p))),
    "the terminal event over NOTIFY",
  );

  assert.ok(payloads.length >= 5, `NOTIFY delivered ${payloads.length} events`);
  for (const payload of payloads) {
    assert.ok(!payload.includes("secret"), `NOTIFY payload ${payload} carries a secret`);
  }
  const [{ denied }] = await db.sql`
      select not has_table_privilege('sluice_test_nobody', 'sluice.runs', 'select') as denied`;
  assert.equal(denied, true);
  const error = 'step "bad" task 0 failed: secret-error';
  assert.deepEqual(
    events.filter((e) => e.type === "step:completed" || e.type === "run:failed")
      .map(({ at: _at, ...rest }) => rest),
    [
      { type: "step:completed", runId, stepSlug: "good", output: "secret-output" },
      { type: "run:failed", runId, flowSlug: "boom2", stepSlug: "bad", errorMessage: error },
    ],
  );
  assert.ok(events.some((e) => e.type === "step:failed" && e.errorMessage === error));
});

Deno.test("error texts sent to browsers (realtime.send, read_run_events) have no stack frames or file paths", async () => {
  await using db = await freshDatabase();
  await installRealtimeSend(db.sql);
  await compileFlow(db.sql, {
    slug: "boom2",
    maxAttempts: 1,
    steps: [{ slug: "good" }, { slug: "bad", deps: [] }],
  });
  const runId = crypto.randomUUID();
  await secretRun(
    db,
    runId,
    [
      "Error: it broke",
      "    at handler (file:///app/flows/report.ts:12:5)",
      "    at async run (/srv/app/worker.ts:3:1)",
      "Caused by TypeError: cannot read /srv/app/data/x.ts:4",
      "    at load (file:///app/load.ts:1:1)",
    ].join("\n"),
  );
  const expected =
    'step "bad" task 0 failed: Error: it broke\nCaused by TypeError: cannot read <file>';
  const calls = await realtimeCalls(db.sql, `sluice:run:${runId}`);
  const broadcast = calls.map((c) => c.payload).filter((p) => p.errorMessage !== undefined);
  assert.deepEqual(broadcast.map((p) => [p.type, p.errorMessage]), [
    ["step:failed", expected],
    ["run:failed", expected],
  ]);
  const [{ events }] = await db.sql<{ events: Event[] }[]>`
    select sluice.read_run_events(${runId}) as events`;
  assert.deepEqual(
    events.filter((e) => typeof e.errorMessage === "string").map((e) => e.errorMessage),
    [expected, expected],
  );
  // The run itself keeps the whole text, for privileged readers.
  const [{ error_message }] = await db.sql`
    select error_message from sluice.runs where run_id = ${runId}`;
  assert.match(error_message, /at handler \(file:\/\/\/app\/flows\/report\.ts:12:5\)/);
});
