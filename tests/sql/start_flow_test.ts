import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  compileFlow,
  completeTask,
  read,
  readAndClaim,
  registerWorker,
  startFlow,
  stepStatuses,
  taskStatuses,
} from "./_fixtures.ts";

Deno.test("start_flow() creates the run, its step states and the root tasks with messages", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "Orders",
    steps: [{ slug: "a" }, { slug: "b" }, { slug: "c", deps: ["a", "b"] }],
  });
  const runId = await startFlow(db.sql, "Orders", { id: 7 });

  const [runRow] = await db.sql`select * from sluice.runs where run_id = ${runId}`;
  assert.equal(runRow.status, "started");
  assert.equal(runRow.remaining_steps, 3);
  assert.deepEqual(runRow.input, { id: 7 });
  assert.deepEqual(await stepStatuses(db.sql, runId), { a: "started", b: "started", c: "created" });
  assert.deepEqual(await taskStatuses(db.sql, runId), { "a:0": "queued", "b:0": "queued" });

  const tasks = await db
    .sql`select queue_name, message_id from sluice.step_tasks where run_id = ${runId}`;
  assert.ok(tasks.every((t) => t.queue_name === "orders"), "tasks snapshot the lowercase queue");
  const messages = await read(db.sql, "orders");
  assert.deepEqual(
    messages.map((m) => m.message).sort((x, y) => x.step_slug.localeCompare(y.step_slug)),
    [
      { flow_slug: "Orders", run_id: runId, step_slug: "a", task_index: 0 },
      { flow_slug: "Orders", run_id: runId, step_slug: "b", task_index: 0 },
    ],
  );
  assert.deepEqual(
    new Set(messages.map((m) => m.msg_id)),
    new Set(tasks.map((t) => t.message_id)),
  );
});

Deno.test("start_flow() uses the given run id and resolves an alias first", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "v1_flow", steps: [{ slug: "a" }] });
  await compileFlow(db.sql, { slug: "v2_flow", steps: [{ slug: "a" }] });
  await db.sql`insert into sluice.aliases (alias, flow_slug) values ('current', 'v2_flow')`;
  const runId = crypto.randomUUID();
  const [row] = await db.sql`select sluice.start_flow('current', '{}'::jsonb, ${runId}) as id`;
  assert.equal(row.id, runId);
  const [runRow] = await db
    .sql`select flow_slug, started_via from sluice.runs where run_id = ${runId}`;
  assert.deepEqual({ ...runRow }, { flow_slug: "v2_flow", started_via: "current" });
});

Deno.test("start_flow() rejects an unknown flow, naming it, and writes nothing", async () => {
  await using db = await freshDatabase();
  await assert.rejects(
    db.sql`select sluice.start_flow('nope', '{}'::jsonb)`,
    /Cannot start flow "nope": no flow or alias has that name/,
  );
  const [row] = await db.sql`select count(*)::int as n from sluice.runs`;
  assert.equal(row.n, 0);
});

Deno.test("start_flow() rejects non-array input for a root map and writes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "mapper", steps: [{ slug: "each", type: "map" }] });
  await assert.rejects(
    db.sql`select sluice.start_flow('mapper', '{"a":1}'::jsonb)`,
    /root map step "each" maps over the run input, which must be an array, got object/,
  );
  const [runs] = await db.sql`select count(*)::int as n from sluice.runs`;
  const [metrics] = await db.sql`select queue_length::int as n from pgmq.metrics('mapper')`;
  assert.equal(runs.n, 0);
  assert.equal(metrics.n, 0);
});

Deno.test("start_flow() rejects a duplicate run id", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "dup", steps: [{ slug: "a" }] });
  const runId = crypto.randomUUID();
  await db.sql`select sluice.start_flow('dup', '{}'::jsonb, ${runId})`;
  await assert.rejects(
    db.sql`select sluice.start_flow('dup', '{}'::jsonb, ${runId})`,
    new RegExp(`run ${runId} already exists`),
  );
});

Deno.test("start_flow() delays root messages by the step's start delay", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, { slug: "later", steps: [{ slug: "a", startDelay: 60 }] });
  await startFlow(db.sql, "later", {});
  assert.equal((await read(db.sql, "later")).length, 0);
  const [row] = await db
    .sql`select vt > clock_timestamp() + interval '55 seconds' as delayed from pgmq.q_later`;
  assert.equal(row.delayed, true);
});

Deno.test("a map's tasks hold their own element from the start, and the claim hands it over", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, {
    slug: "wide",
    steps: [
      { slug: "items", type: "map" },
      { slug: "list", deps: [] },
      { slug: "each", type: "map", deps: ["list"], mapSource: "list" },
    ],
  });
  const elements = [{ a: 1 }, "x", [2], null, 5];
  const runId = await startFlow(db.sql, "wide", elements);
  const workerId = await registerWorker(db.sql, "wide", "wide");
  const stored = async (step: string) =>
    (await db.sql`
      select input from sluice.step_tasks
      where run_id = ${runId} and step_slug = ${step} order by task_index
    `).map((row) => row.input);

  assert.deepEqual(await stored("items"), elements, "a root map's elements, in order");
  assert.deepEqual(await stored("list"), [null], "a single step stores no input");
  const claimed = await readAndClaim(db.sql, "wide", workerId, "wide");
  const list = claimed.find((t) => t.step_slug === "list")!;
  assert.deepEqual(
    claimed.filter((t) => t.step_slug === "items").map((t) => [t.task_index, t.input]),
    elements.map((e, i) => [i, e]),
  );
  assert.equal(await completeTask(db.sql, list, ["p", { q: 1 }]), "completed");
  assert.deepEqual(await stored("each"), ["p", { q: 1 }], "a dependent map's, when it starts");
  const each = await readAndClaim(db.sql, "wide", workerId, "wide");
  assert.deepEqual(each.map((t) => t.input), ["p", { q: 1 }]);
});
