// The browser client end to end on supabase-js, against stand-ins for Supabase's Data API and
// Realtime servers (real HTTP and WebSockets) in front of a real PostgreSQL: what the Realtime
// server itself does (authorization policies, its own delivery) is not exercised here.
import assert from "node:assert/strict";
import { createClient, type SupabaseClient } from "@supabase/supabase-js";
import { type RunEvent, startRun, subscribeToRun } from "../../src/browser/mod.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";
import {
  compileFlow,
  completeTask,
  failTask,
  readAndClaim,
  registerWorker,
  type Sql,
} from "../sql/_fixtures.ts";
import { installRealtimeSend, startSupabaseStandIn } from "./_supabase_stand_in.ts";

const ROLE = "sluice_test_browser";

const FLOW = {
  slug: "web",
  progressInterval: 0,
  steps: [
    { slug: "list" },
    { slug: "premium", if: { tier: "gold" } },
    { slug: "double", type: "map" as const, deps: ["list"], mapSource: "list" },
    { slug: "flaky", deps: ["double"], maxAttempts: 2 },
  ],
};

/** The same flow in the DSL, for the event types (never run here). */
const webFlow = new Flow<{ tier: string }>({ slug: "web" })
  .step({ slug: "list" }, () => [1, 2, 3])
  .step({ slug: "premium", if: { tier: "gold" } }, () => true)
  .map({ slug: "double", array: "list" }, (n) => n * 2)
  .step({ slug: "flaky", dependsOn: ["double"] }, () => "ok");

function expectedEvents(runId: string): Record<string, unknown>[] {
  return [
    { type: "run:started", runId, flowSlug: "web" },
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
    { type: "run:completed", runId, flowSlug: "web", output: { flaky: "ok" } },
  ];
}

/** A database with the flow, the stand-in realtime.send and a role granted just the two RPCs. */
async function browserDatabase() {
  const db = await freshDatabase();
  await installRealtimeSend(db.sql);
  await compileFlow(db.sql, FLOW);
  await db.sql.unsafe(`
    do $$ begin
      if not exists (select 1 from pg_roles where rolname = '${ROLE}') then
        create role ${ROLE} nologin;
      end if;
    end $$;
    grant usage on schema sluice to ${ROLE};
    grant execute on function sluice.start_run(text, jsonb), sluice.read_run_events(uuid)
      to ${ROLE}`);
  return db;
}

function browserClient(url: string): SupabaseClient {
  return createClient(url, "anon-key", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
}

/** Settles every visible task of the run, one per transaction; flaky fails its first attempt. */
async function driveRun(sql: Sql, only?: (step: string) => boolean): Promise<void> {
  const workerId = await registerWorker(sql, "web", "web", `web_${crypto.randomUUID()}`);
  let flaky = 0;
  for (let round = 0; round < 20; round++) {
    const tasks = (await readAndClaim(sql, "web", workerId, "web"))
      .sort((a, b) => a.step_slug.localeCompare(b.step_slug) || a.task_index - b.task_index);
    if (tasks.length === 0) return;
    for (const task of tasks) {
      if (task.step_slug === "list") await completeTask(sql, task, [1, 2, 3]);
      else if (task.step_slug === "double") {
        await completeTask(sql, task, (task.input as number) * 2);
      } else if (++flaky === 1) await failTask(sql, task, "flaky once", 0);
      else await completeTask(sql, task, "ok");
    }
    if (only !== undefined && tasks.every((task) => only(task.step_slug))) return;
  }
}

function collect(iterator: AsyncGenerator<RunEvent<typeof webFlow>, void, undefined>) {
  const events: Record<string, unknown>[] = [];
  const done = (async () => {
    for await (const { at, ...event } of iterator) {
      assert.equal(typeof at, "string");
      events.push(event);
    }
  })();
  return { events, done };
}

// supabase-js leaves timers of its own running after disconnect() (a 10 s one in realtime-js
// SocketAdapter.disconnect): the sanitizers would blame the test for them.
const SUPABASE_JS = { sanitizeOps: false, sanitizeResources: false };

Deno.test(
  "startRun() starts a run through the RPC and subscribeToRun() yields its exact events over Realtime",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await using standIn = startSupabaseStandIn(db.sql, ROLE);
    const supabase = browserClient(standIn.url);
    try {
      const runId = await startRun(supabase, webFlow, { tier: "silver" });
      const watcher = collect(subscribeToRun(supabase, { runId, flow: webFlow }));
      await waitUntil(() => watcher.events.length >= 3 && standIn.joins === 1, "replay and join");
      await driveRun(db.sql);
      await watcher.done;
      assert.deepEqual(watcher.events, expectedEvents(runId));
    } finally {
      await supabase.removeAllChannels();
      await supabase.realtime.disconnect();
    }
  },
);

Deno.test(
  "subscribeToRun() after a dropped socket rejoins, replays what it missed, and yields the terminal event once",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await using standIn = startSupabaseStandIn(db.sql, ROLE);
    const supabase = browserClient(standIn.url);
    try {
      const runId = await startRun(supabase, "web", { tier: "silver" });
      const watcher = collect(subscribeToRun(supabase, runId));
      await waitUntil(() => watcher.events.length >= 3 && standIn.joins === 1, "replay and join");
      await driveRun(db.sql, (step) => step === "list");
      await waitUntil(() => watcher.events.length >= 5, "the live events of list");
      standIn.dropSockets();
      // The rest of the run, the terminal event included, is broadcast while no socket is joined.
      await driveRun(db.sql);
      await watcher.done;
      assert.ok(standIn.joins >= 2, "the channel was joined again");
      assert.deepEqual(
        watcher.events.filter((e) => e.type !== "step:progress"),
        expectedEvents(runId).filter((e) => e.type !== "step:progress"),
      );
      assert.equal(watcher.events.filter((e) => e.type === "run:completed").length, 1);
    } finally {
      await supabase.removeAllChannels();
      await supabase.realtime.disconnect();
    }
  },
);

Deno.test(
  "startRun() reports the RPC's refusal for a role that was granted nothing",
  SUPABASE_JS,
  async () => {
    await using db = await freshDatabase();
    await compileFlow(db.sql, FLOW);
    await using standIn = startSupabaseStandIn(db.sql, "sluice_test_nobody");
    await db.sql.unsafe(`
    do $$ begin
      if not exists (select 1 from pg_roles where rolname = 'sluice_test_nobody') then
        create role sluice_test_nobody nologin;
      end if;
    end $$`);
    const supabase = browserClient(standIn.url);
    await assert.rejects(
      startRun(supabase, "web", { tier: "silver" }),
      /^Error: Cannot start flow "web": permission denied for schema sluice$/,
    );
  },
);
