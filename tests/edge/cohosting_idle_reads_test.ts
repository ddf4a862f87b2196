// An idle co-hosting function reads once per poll interval for all the steps it hosts: its
// LISTEN session looks at the waiting workers' queues in one statement and wakes only those with a
// visible message, instead of every worker reading its own queue on its own timer. Messages that
// become visible with no notification (a retry's backoff) are still found by that look.
import assert from "node:assert/strict";
import { startFlow } from "../../src/client/start_flow.ts";
import { waitForRun } from "../../src/client/wait_for_run.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { withStepQueues } from "../../src/dsl/step_queues.ts";
import { serveWorkers } from "../../src/edge/mod.ts";
import { freshDatabase } from "../_db.ts";
import { call, LogCapture, SECRET, waitUntil } from "./_helpers.ts";
import { scaled } from "../_support.ts";

const STEPS = ["a", "b", "c", "d", "e", "f"] as const;
/** Looks of the session to wait for: twenty intervals of idleness. */
const LOOKS = 20;

Deno.test("an idle co-hosting function of six steps reads once per interval for all of them, and a retry's backoff still wakes its worker", async () => {
  await using db = await freshDatabase();
  // Count calls of sluice's functions in the function's sessions (opened after this).
  const [{ name }] = await db.sql`select current_database() as name`;
  await db.sql.unsafe(`alter database "${name}" set track_functions = 'all'`);
  const failedOnce = new Set<string>();
  const flow = withStepQueues(
    new Flow<{ n: number }>({ slug: "cohost_idle", maxAttempts: 2, baseDelay: 1 })
      .step({ slug: "a" }, (input) => input.n)
      .step({ slug: "b", dependsOn: ["a"] }, (deps) => deps.a + 1)
      // Fails its first attempt: the retry's message becomes visible a second later, with no
      // commit to notify it.
      .step({ slug: "c", dependsOn: ["b"] }, (deps, ctx) => {
        if (!failedOnce.has(ctx.runId)) {
          failedOnce.add(ctx.runId);
          throw new Error("first attempt fails");
        }
        return deps.b + 1;
      })
      .step({ slug: "d", dependsOn: ["c"] }, (deps) => deps.c + 1)
      .step({ slug: "e", dependsOn: ["d"] }, (deps) => deps.d + 1)
      .step({ slug: "f", dependsOn: ["e"] }, (deps) => deps.e + 1),
    { functions: Object.fromEntries(STEPS.map((step) => [step, "office-idle"])) },
  );
  const logs = new LogCapture();
  await using served = serveWorkers([flow], {
    functionName: "office-idle",
    connectionString: db.url,
    secret: SECRET,
    env: {},
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
    handleSignals: false,
    // Beats do not read; a long interval keeps their sweeps out of the way.
    heartbeatIntervalMs: 60_000,
    pollIntervalMs: 100,
    logLevel: "debug",
    logger: logs.sink,
  });
  const { status, body } = await call(new URL(`http://127.0.0.1:${served.addr.port}/`));
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.workers?.length, STEPS.length);

  const calls = async () => {
    const rows = await db.sql`
      select funcname, calls::int from pg_stat_user_functions
      where schemaname = 'sluice' and funcname in ('start_tasks', 'wait_for_messages')`;
    const counted = Object.fromEntries(rows.map((row) => [row.funcname, row.calls]));
    return { reads: counted.start_tasks ?? 0, looks: counted.wait_for_messages ?? 0 };
  };
  const idle = await waitUntil(async () => {
    const counted = await calls();
    return counted.looks >= LOOKS ? counted : null;
  }, `${LOOKS} looks at the queues of the idle function`);
  // Each worker read once when it started and then waited: one look per interval for the six of
  // them, where each reading on its own timer would have made six reads per interval.
  assert.ok(
    idle.reads <= 2 * STEPS.length,
    `${idle.reads} reads by ${STEPS.length} idle workers during ${idle.looks} looks`,
  );
  console.log(`idle co-hosting function of 6 steps: ${idle.reads} reads, ${idle.looks} looks`);

  // Notifications carry a run through; the retry after c's backoff is found by a look.
  const runId = await startFlow(db.sql, flow, { n: 1 });
  assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: scaled(30_000), flow }), { f: 6 });
  const [attempts] = await db.sql`
    select max(attempts_count)::int as c from sluice.step_tasks
    where run_id = ${runId} and step_slug = 'c'`;
  assert.equal(attempts.c, 2);
  await served.shutdown();
  assert.deepEqual(logs.find("error"), []);
});
