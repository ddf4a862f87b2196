// The events of subflows (docs/subflows.md#events) as watchRun() delivers them, live and replayed:
// a child's start and end in its PARENT run's stream (child:started after the step's
// step:waiting, each child's end before the step's own), a child's run:started naming its parent,
// and over NOTIFY, which any role may LISTEN to, a failed child's error text left out and read back.
import assert from "node:assert/strict";
import { Flow, type RunEvent } from "../../mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { watchRun } from "../../src/client/watch_run.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { type Event, listenAs, withoutAt } from "../_run_events.ts";
import { scaled, within } from "../_support.ts";
import { testWorker, uniqueSlug, waitUntil } from "../worker/_helpers.ts";

/** Collects a watch's events as they come. */
function watch(db: TestDatabase, runId: string) {
  const events: RunEvent[] = [];
  const done = (async () => {
    for await (const event of watchRun(db.sql, runId)) events.push(event);
  })();
  return { events, done };
}

function bare(events: readonly RunEvent[]): Event[] {
  return withoutAt(events as unknown as readonly Event[]);
}

async function childIds(db: TestDatabase, parent: string): Promise<string[]> {
  const rows = await db.sql<{ run_id: string }[]>`
    select run_id from sluice.runs where parent_run_id = ${parent} order by parent_task_index`;
  return rows.map((row) => row.run_id);
}

/** Where `type` sits in `events` (-1: absent), for the child `index` when given. */
function position(events: readonly RunEvent[], type: string, stepSlug: string, index?: number) {
  return events.findIndex((event) =>
    event.type === type && "stepSlug" in event && event.stepSlug === stepSlug &&
    (index === undefined || ("index" in event && event.index === index))
  );
}

Deno.test("a map subflow's children start and end in the parent's stream: child:started after step:waiting, every child:completed before step:completed; the replay has the same", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ i: number }>({ slug: uniqueSlug("ev_item") })
    .step({ slug: "twice" }, (input) => input.i * 2);
  const parent = new Flow<{ count: number }>({ slug: uniqueSlug("ev_fan") })
    .step({ slug: "load" }, (input) => Array.from({ length: input.count }, (_, i) => ({ i })))
    .mapSubflow({ slug: "items", dependsOn: ["load"], flow: child, input: (deps) => deps.load })
    .step({ slug: "sum", dependsOn: ["items"] }, (deps) => deps.items.map((o) => o.twice));
  await using _c = await testWorker(child, db, { maxConcurrent: 3 });
  await using _p = await testWorker(parent, db);

  const runId = await startFlow(db.sql, parent, { count: 3 });
  const live = watch(db, runId);
  await within(live.done, "the parent's terminal event", scaled(20_000));
  const kids = await childIds(db, runId);
  assert.equal(kids.length, 3);

  const childEvents = (events: readonly RunEvent[]) =>
    bare(events.filter((event) => event.type.startsWith("child:"))).toSorted((a, b) =>
      (a.index as number) - (b.index as number) ||
      Number(a.type !== "child:started") - Number(b.type !== "child:started")
    );
  const expected = kids.flatMap((childRunId, index) => [
    { type: "child:started", runId, stepSlug: "items", index, childRunId, flowSlug: child.slug },
    { type: "child:completed", runId, stepSlug: "items", index, childRunId, flowSlug: child.slug },
  ]);
  assert.deepEqual(childEvents(live.events), expected);
  const waiting = position(live.events, "step:waiting", "items");
  const completed = position(live.events, "step:completed", "items");
  assert.ok(waiting >= 0 && completed > waiting);
  for (let index = 0; index < 3; index++) {
    const started = position(live.events, "child:started", "items", index);
    const ended = position(live.events, "child:completed", "items", index);
    assert.ok(waiting < started && started < ended && ended < completed, `child ${index} in order`);
  }
  assert.deepEqual(live.events.at(-1), {
    ...live.events.at(-1),
    type: "run:completed",
    output: { sum: [0, 2, 4] },
  });

  // A watch of the finished parent replays the children's events too, in the same places.
  const replay = watch(db, runId);
  await within(replay.done, "the replay's terminal event", scaled(5_000));
  assert.deepEqual(childEvents(replay.events), expected);
  const replayed = bare(replay.events);
  assert.deepEqual(
    replayed.map((event) => `${event.type} ${event.stepSlug ?? ""}${event.index ?? ""}`),
    [
      "run:started ",
      "step:started load",
      "step:completed load",
      "step:waiting items",
      "child:started items0",
      "child:started items1",
      "child:started items2",
      ...replayed.filter((event) => event.type === "child:completed").map((event) =>
        `child:completed items${event.index}`
      ),
      "step:completed items",
      "step:started sum",
      "step:completed sum",
      "run:completed ",
    ],
  );

  // The child's own watch knows its parent: run, step and index.
  const own = watch(db, kids[2]);
  await within(own.done, "the child's terminal event", scaled(5_000));
  assert.deepEqual(bare(own.events)[0], {
    type: "run:started",
    runId: kids[2],
    flowSlug: child.slug,
    parent: { runId, stepSlug: "items", index: 2 },
  });
  // A root run's run:started has no parent.
  assert.equal("parent" in live.events[0], false);
});

Deno.test("a failed child: child:failed with its error in the parent's stream (over NOTIFY without it, read back by watchRun), before step:failed; a cancelled parent's children: child:cancelled", async () => {
  await using db = await freshDatabase();
  const child = new Flow<{ i: number }>({ slug: uniqueSlug("ev_bad"), maxAttempts: 1 })
    .step({ slug: "boom" }, (input) => {
      if (input.i === 1) throw new Error("secret-boom");
      return input.i;
    });
  const parent = new Flow<{ count: number }>({ slug: uniqueSlug("ev_par") })
    .step({ slug: "load" }, (input) => Array.from({ length: input.count }, (_, i) => ({ i })))
    .mapSubflow({ slug: "items", dependsOn: ["load"], flow: child, input: (deps) => deps.load });
  await using _c = await testWorker(child, db);
  await using _p = await testWorker(parent, db);

  const runId = crypto.randomUUID();
  await using listener = await listenAs(db.sql, db.url, "sluice_test_listener", runId);
  await db.sql`select sluice.start_flow(${parent.slug}, '{"count": 2}'::jsonb, ${runId})`;
  const live = watch(db, runId);
  await within(live.done, "the parent's terminal event", scaled(20_000));
  const [first, second] = await childIds(db, runId);
  const failed = live.events.find((event) => event.type === "child:failed");
  assert.ok(failed?.type === "child:failed");
  assert.deepEqual([failed.childRunId, failed.index, failed.flowSlug], [second, 1, child.slug]);
  assert.match(failed.errorMessage, /secret-boom/);
  assert.equal("omitted" in failed, false);
  assert.ok(
    position(live.events, "child:failed", "items", 1) <
      position(live.events, "step:failed", "items"),
  );
  assert.equal(live.events.at(-1)?.type, "run:failed");
  // The other child completed or was cancelled with its parent: either way its end is there.
  const other = live.events.filter((event) =>
    event.type !== "child:started" && event.type.startsWith("child:") &&
    "childRunId" in event && event.childRunId === first
  );
  assert.equal(other.length, 1);

  await waitUntil(
    () => listener.payloads.some((p) => JSON.parse(p).type === "child:failed"),
    "child:failed over NOTIFY",
  );
  for (const payload of listener.payloads) {
    assert.ok(!payload.includes("secret"), `NOTIFY payload ${payload} carries a secret`);
  }
  const notified = listener.payloads.map((p) => JSON.parse(p));
  assert.deepEqual(notified.find((e) => e.type === "child:failed").omitted, ["errorMessage"]);
  assert.equal(notified.filter((e) => e.type === "child:started").length, 2);

  // Cancelling a parent whose children wait: each child's child:cancelled, then run:cancelled.
  const slow = new Flow<{ i: number }>({ slug: uniqueSlug("ev_slow") })
    .step(
      { slug: "hold" },
      (_input, ctx) =>
        new Promise<null>((resolve) =>
          ctx.signal.addEventListener("abort", () => resolve(null), { once: true })
        ),
    );
  const holder = new Flow<{ count: number }>({ slug: uniqueSlug("ev_hold") })
    .step({ slug: "load" }, (input) => Array.from({ length: input.count }, (_, i) => ({ i })))
    .mapSubflow({ slug: "items", dependsOn: ["load"], flow: slow, input: (deps) => deps.load });
  await using _s = await testWorker(slow, db);
  await using _h = await testWorker(holder, db);
  const held = await startFlow(db.sql, holder, { count: 2 });
  const watched = watch(db, held);
  await waitUntil(
    () => watched.events.filter((event) => event.type === "child:started").length === 2,
    "both children started",
  );
  await cancelRun(db.sql, held, { reason: "stop" });
  await within(watched.done, "the cancelled parent's terminal event", scaled(10_000));
  const heldKids = await childIds(db, held);
  assert.deepEqual(
    bare(watched.events.filter((event) => event.type === "child:cancelled")),
    heldKids.map((childRunId, index) => ({
      type: "child:cancelled",
      runId: held,
      stepSlug: "items",
      index,
      childRunId,
      flowSlug: slow.slug,
    })),
  );
  assert.equal(watched.events.at(-1)?.type, "run:cancelled");
});
