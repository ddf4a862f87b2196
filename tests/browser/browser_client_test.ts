// The browser client end to end on supabase-js, against stand-ins for Supabase's Data API and
// Realtime servers (real HTTP and WebSockets) in front of a real PostgreSQL: what the Realtime
// server itself does (authorization policies, its own delivery) is not exercised here.
import assert from "node:assert/strict";
import { createClient, type SupabaseClient } from "@supabase/supabase-js";
import { startRun, subscribeToRun } from "../../src/browser/mod.ts";
import { IdempotencyConflictError, StartOptionError } from "../../src/dsl/start_options.ts";
import { activateAlias } from "../../src/deploy/aliases.ts";
import { defineDeployedFlow } from "../../src/dsl/deployed_flow.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import {
  collect,
  ensureRole,
  installRealtimeSend,
  mixedEvents,
  mixedFlow,
  MixedRunDriver,
  withoutProgress,
} from "../_run_events.ts";
import { waitUntil, within } from "../_support.ts";
import { compileFlow } from "../sql/_fixtures.ts";
import { startSupabaseStandIn, type SupabaseStandIn } from "./_supabase_stand_in.ts";

const ROLE = "sluice_test_browser";

/** The same flow in the DSL, for the event types (never run here). */
const webFlow = new Flow<{ tier: string }>({ slug: "web" })
  .step({ slug: "list" }, () => [1, 2, 3])
  .step({ slug: "premium", if: { tier: "gold" } }, () => true)
  .map({ slug: "double", array: "list" }, (n) => n * 2)
  .step({ slug: "flaky", dependsOn: ["double"] }, () => "ok");

/** A database with the flow, the stand-in realtime.send and a role granted just the two RPCs. */
async function browserDatabase() {
  const db = await freshDatabase();
  await installRealtimeSend(db.sql);
  await compileFlow(db.sql, mixedFlow("web"));
  await ensureRole(db.sql, ROLE);
  await db.sql.unsafe(`
    grant usage on schema sluice to ${ROLE};
    grant execute on function sluice.start_run(text, jsonb), sluice.start_run(text, jsonb, jsonb),
      sluice.read_run_events(uuid) to ${ROLE}`);
  return db;
}

// supabase-js leaves timers of its own running after disconnect() (a 10 s one in realtime-js
// SocketAdapter.disconnect): the sanitizers would blame the test for them.
const SUPABASE_JS = { sanitizeOps: false, sanitizeResources: false };

/** Runs `body` with a supabase-js client of the stand-ins, whose RPCs run as `role`. */
async function withSupabase(
  db: TestDatabase,
  role: string,
  body: (supabase: SupabaseClient, standIn: SupabaseStandIn) => Promise<void>,
): Promise<void> {
  await using standIn = startSupabaseStandIn(db.sql, role);
  const supabase = createClient(standIn.url, "anon-key", {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
  });
  try {
    await body(supabase, standIn);
  } finally {
    await supabase.removeAllChannels();
    await supabase.realtime.disconnect();
  }
}

Deno.test(
  "startRun() starts a run through the RPC and subscribeToRun() yields its exact events over Realtime",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await withSupabase(db, ROLE, async (supabase, standIn) => {
      const runId = await startRun(supabase, webFlow, { tier: "silver" });
      const watcher = collect(subscribeToRun(supabase, { runId, flow: webFlow }));
      await waitUntil(() => watcher.events.length >= 3 && standIn.joins === 1, "replay and join");
      await new MixedRunDriver(db.sql, "web").finish();
      await within(watcher.done, "the terminal event", 5_000);
      assert.deepEqual(watcher.events, mixedEvents(runId, "web"));
    });
  },
);

Deno.test(
  "startRun() through supabase-js records the traceparent header of its request on the run",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await using standIn = startSupabaseStandIn(db.sql, ROLE);
    // What supabase-js sends with tracePropagation enabled inside an active span.
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const supabase = createClient(standIn.url, "anon-key", {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
      global: { headers: { traceparent } },
    });
    const traced = await startRun(supabase, webFlow, { tier: "silver" });
    const plain = createClient(standIn.url, "anon-key", {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
      global: { headers: { traceparent: "00-not-a-trace-context" } },
    });
    const malformed = await startRun(plain, webFlow, { tier: "silver" });
    const rows = await db.sql`
      select run_id::text, traceparent from sluice.runs
      where run_id in (${traced}::uuid, ${malformed}::uuid)`;
    assert.deepEqual(
      Object.fromEntries(rows.map((row) => [row.run_id, row.traceparent])),
      { [traced]: traceparent, [malformed]: null },
    );
    await supabase.realtime.disconnect();
    await plain.realtime.disconnect();
  },
);

Deno.test(
  "startRun() of a deployed flow sends its alias, resolved when the run starts",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await activateAlias(db.sql, "web_live", "web", { expectedGeneration: 0, force: true });
    const live = defineDeployedFlow(
      new Flow<{ tier: string }>({ slug: "web_next" }).step({ slug: "list" }, () => [1]),
      { alias: "web_live" },
    );
    await withSupabase(db, ROLE, async (supabase) => {
      const runId = await startRun(supabase, live, { tier: "gold" });
      const [run] = await db.sql`
        select flow_slug, started_via from sluice.runs where run_id = ${runId}::uuid`;
      assert.deepEqual({ ...run }, { flow_slug: "web", started_via: "web_live" });
    });
  },
);

Deno.test(
  "startRun() by name parses a string holding a JSON object: the run starts with the object",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await withSupabase(db, ROLE, async (supabase) => {
      const parsed = await startRun(supabase, "web", '{"tier": "gold"}');
      const plain = await startRun(supabase, "web", "gold");
      const rows = await db.sql`
        select run_id::text, input from sluice.runs where run_id in (${parsed}::uuid, ${plain}::uuid)`;
      assert.deepEqual(
        Object.fromEntries(rows.map((row) => [row.run_id, row.input])),
        { [parsed]: { tier: "gold" }, [plain]: "gold" },
      );
    });
  },
);

Deno.test(
  "startRun() with an idempotency key returns the run the key started, and refuses another input",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await withSupabase(db, ROLE, async (supabase) => {
      const first = await startRun(supabase, "web", { tier: "gold" }, { idempotencyKey: "tab-1" });
      const again = await startRun(supabase, "web", { tier: "gold" }, { idempotencyKey: "tab-1" });
      assert.equal(again, first);
      await assert.rejects(
        startRun(supabase, "web", { tier: "silver" }, { idempotencyKey: "tab-1" }),
        (error: unknown) =>
          error instanceof IdempotencyConflictError && error.runId === first &&
          error.idempotencyKey === "tab-1",
      );
      await assert.rejects(
        startRun(supabase, "web", { tier: "gold" }, { idempotencyKey: "" }),
        StartOptionError,
      );
      const runs = await db.sql`select run_id::text, input from sluice.runs`;
      assert.deepEqual(runs.map((run) => ({ ...run })), [{
        run_id: first,
        input: { tier: "gold" },
      }]);
    });
  },
);

Deno.test(
  "startRun() with a priority gives the run it; with a debounce returns one pending run for the key, which starts with the last input",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await withSupabase(db, ROLE, async (supabase) => {
      const debounce = { key: "draft-1", windowSeconds: 60 };
      const first = await startRun(supabase, "web", { tier: "gold" }, { debounce });
      const again = await startRun(supabase, "web", { tier: "silver" }, { debounce });
      assert.equal(again, first);
      await assert.rejects(
        startRun(supabase, "web", { tier: "gold" }, { debounce: { key: "k", windowSeconds: 0 } }),
        (error: unknown) =>
          error instanceof StartOptionError && error.option === "debounce.windowSeconds",
      );
      const urgent = await startRun(supabase, "web", { tier: "gold" }, { priority: 3 });
      const [{ priority }] = await db.sql`
        select priority from sluice.runs where run_id = ${urgent}::uuid`;
      assert.equal(priority, 3);
      await db.sql`delete from sluice.runs where run_id = ${urgent}::uuid`;
      await db.sql`update sluice.debounced_starts set due_at = clock_timestamp()`;
      await db.sql`select sluice.start_due_debounced()`;
      const runs = await db.sql`select run_id::text, input from sluice.runs`;
      assert.deepEqual(runs.map((run) => ({ ...run })), [{
        run_id: first,
        input: { tier: "silver" },
      }]);
    });
  },
);

Deno.test(
  "subscribeToRun() after a dropped socket rejoins, replays what it missed, and yields the terminal event once",
  SUPABASE_JS,
  async () => {
    await using db = await browserDatabase();
    await withSupabase(db, ROLE, async (supabase, standIn) => {
      const runId = await startRun(supabase, "web", { tier: "silver" });
      const watcher = collect(subscribeToRun(supabase, runId));
      await waitUntil(() => watcher.events.length >= 3 && standIn.joins === 1, "replay and join");
      const driver = new MixedRunDriver(db.sql, "web");
      await driver.step(); // list
      await waitUntil(() => watcher.events.length >= 5, "the live events of list");
      standIn.dropSockets();
      // The rest of the run, the terminal event included, is broadcast while no socket is joined.
      await driver.finish();
      await within(watcher.done, "the terminal event", 5_000);
      assert.ok(standIn.joins >= 2, "the channel was joined again");
      assert.deepEqual(withoutProgress(watcher.events), withoutProgress(mixedEvents(runId, "web")));
      assert.equal(watcher.events.filter((e) => e.type === "run:completed").length, 1);
    });
  },
);

Deno.test(
  "startRun() reports the RPC's refusal for a role that was granted nothing",
  SUPABASE_JS,
  async () => {
    await using db = await freshDatabase();
    await compileFlow(db.sql, mixedFlow("web"));
    await ensureRole(db.sql, "sluice_test_nobody");
    await withSupabase(db, "sluice_test_nobody", async (supabase) => {
      await assert.rejects(
        startRun(supabase, "web", { tier: "silver" }),
        /^Error: Cannot start flow "web": permission denied for schema sluice$/,
      );
    });
  },
);
