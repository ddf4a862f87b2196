// Size limits enforced by the database on every entry point (docs/sql.md#limits): run input
// (start_flow, start_flow_version, start_run), step outputs (complete_tasks, complete_task) and
// map fan-out, each refused with SQLSTATE SLL01 naming the limit and the size, before anything
// is written; per-flow runtime options, defaults shared with TypeScript.
import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { DEFAULT_MAX_JSON_BYTES, DEFAULT_MAX_MAP_TASKS } from "../../src/dsl/limits.ts";
import {
  compile,
  definition,
  type FlowSpec,
  readAndClaim,
  registerWorker,
  type Sql,
} from "./_fixtures.ts";

async function rowCounts(sql: Sql) {
  const [row] = await sql`
    select (select count(*) from sluice.runs)::int as runs,
      (select count(*) from sluice.step_tasks)::int as tasks,
      (select count(*) from sluice.step_states where status = 'completed')::int as completed`;
  return { ...row };
}

function isLimitError(pattern: RegExp) {
  return (error: Error & { code?: string }) => {
    assert.equal(error.code, "SLL01", error.message);
    assert.match(error.message, pattern);
    return true;
  };
}

const LIMITED: FlowSpec = { slug: "limited", steps: [{ slug: "one" }] };

async function compileLimited(sql: Sql, options: Record<string, number | null>) {
  const def = definition(LIMITED);
  Object.assign(def.options, options);
  return await compile(sql, def);
}

Deno.test("the SQL defaults are the TypeScript defaults: 16 MiB of JSON, 10,000 map tasks", async () => {
  await using db = await freshDatabase();
  const [row] = await db.sql`
    select sluice.default_max_json_bytes() as bytes, sluice.default_max_map_tasks() as tasks`;
  assert.deepEqual({ ...row }, { bytes: DEFAULT_MAX_JSON_BYTES, tasks: DEFAULT_MAX_MAP_TASKS });
  await compileLimited(db.sql, {});
  const [flow] = await db.sql`
    select opt_max_input_bytes, opt_max_output_bytes, opt_max_map_tasks from sluice.flows`;
  assert.deepEqual({ ...flow }, {
    opt_max_input_bytes: DEFAULT_MAX_JSON_BYTES,
    opt_max_output_bytes: DEFAULT_MAX_JSON_BYTES,
    opt_max_map_tasks: DEFAULT_MAX_MAP_TASKS,
  });
});

Deno.test("a run input over the flow's max_input_bytes is refused on every start path, nothing written", async () => {
  await using db = await freshDatabase();
  await compileLimited(db.sql, { max_input_bytes: 100 });
  const browser = `limit_browser_${crypto.randomUUID().slice(0, 8)}`;
  await db.sql.unsafe(`create role ${browser}`);
  await db.sql.unsafe(`grant usage on schema sluice to ${browser}`);
  await db.sql.unsafe(`grant execute on function sluice.start_run(text, jsonb) to ${browser}`);
  const input = { text: "x".repeat(200) };
  // jsonb's text form: {"text": "xxx..."}
  const bytes = JSON.stringify(input).length + 1;
  const pattern = new RegExp(
    `^Cannot start flow "limited": the input is ${bytes} bytes as JSON, more than the limit of 100 bytes \\(max_input_bytes\\)$`,
  );
  for (
    const call of [
      () => db.sql`select sluice.start_flow('limited', ${db.sql.json(input)}::jsonb)`,
      () => db.sql`select sluice.start_flow_version('limited', ${db.sql.json(input)}::jsonb)`,
      () =>
        db.sql.begin(async (tx) => {
          await tx.unsafe(`set local role ${browser}`);
          await tx`select sluice.start_run('limited', ${tx.json(input)}::jsonb)`;
        }),
      () =>
        db.sql`select sluice.create_run('limited', 'limited', ${db.sql.json(input)}::jsonb, null)`,
    ]
  ) {
    await assert.rejects(call(), isLimitError(pattern));
  }
  assert.deepEqual(await rowCounts(db.sql), { runs: 0, tasks: 0, completed: 0 });
  // The limit is inclusive: 101 bytes are refused, exactly 100 start ({"text": "x...x"}).
  await assert.rejects(
    db.sql`select sluice.start_flow('limited', ${db.sql.json({ text: "x".repeat(89) })}::jsonb)`,
    isLimitError(/the input is 101 bytes as JSON, more than the limit of 100 bytes/),
  );
  await db.sql`select sluice.start_flow('limited', ${
    db.sql.json({ text: "x".repeat(88) })
  }::jsonb)`;
  // A changed option applies at the next startup (runtime option).
  assert.equal((await compileLimited(db.sql, { max_input_bytes: 1000 })).outcome, "verified");
  await db.sql`select sluice.start_flow('limited', ${db.sql.json(input)}::jsonb)`;
  assert.equal((await rowCounts(db.sql)).runs, 2);
});

Deno.test("a step output over the flow's max_output_bytes is refused by complete_tasks and complete_task, nothing written", async () => {
  await using db = await freshDatabase();
  await compileLimited(db.sql, { max_output_bytes: 50 });
  const workerId = await registerWorker(db.sql, "limited", "limited");
  await db.sql`select sluice.start_flow('limited', '{}'::jsonb)`;
  const [task] = await readAndClaim(db.sql, "limited", workerId, "limited");
  const output = { big: "y".repeat(100) };
  const pattern = new RegExp(
    `^Cannot complete task \\(run ${task.run_id}, step "one", index 0\\): the output is ${
      JSON.stringify(output).length + 1
    } bytes as JSON, more than the limit of 50 bytes \\(max_output_bytes\\)$`,
  );
  const token = {
    run_id: task.run_id,
    step_slug: task.step_slug,
    task_index: task.task_index,
    attempt: task.attempt,
    worker_id: task.worker_id,
  };
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${db.sql.json([{ ...token, output }])}::jsonb)`,
    isLimitError(pattern),
  );
  await assert.rejects(
    db.sql`select sluice.complete_task(${task.run_id}, 'one', 0, ${task.attempt}, ${task.worker_id},
      ${db.sql.json(output)}::jsonb)`,
    isLimitError(pattern),
  );
  // One statement checks both: a result naming no task is reported before an oversize one.
  await assert.rejects(
    db.sql`select sluice.complete_tasks(${
      db.sql.json([{ ...token, output }, { ...token, task_index: 7, output: {} }])
    }::jsonb)`,
    new RegExp(`index 7\\): no such task`),
  );
  assert.deepEqual(await rowCounts(db.sql), { runs: 1, tasks: 1, completed: 0 });
  const [state] = await db.sql`select status from sluice.step_tasks`;
  assert.equal(state.status, "started");
  // The limit is inclusive: an output of exactly 50 bytes ({"big": "y...y"}) completes.
  const atLimit = { big: "y".repeat(39) };
  const [done] = await db.sql`
    select sluice.complete_tasks(${db.sql.json([{ ...token, output: atLimit }])}::jsonb) as r`;
  assert.equal(done.r.completed, 1);
});

Deno.test("a map over more elements than max_map_tasks is refused, root and dependent, nothing written", async () => {
  await using db = await freshDatabase();
  const spec: FlowSpec = {
    slug: "fan",
    steps: [
      { slug: "each", type: "map" },
      { slug: "list", deps: [] },
      { slug: "again", type: "map", deps: ["list"], mapSource: "list" },
    ],
  };
  const def = definition(spec);
  def.options.max_map_tasks = 3;
  await compile(db.sql, def);
  await assert.rejects(
    db.sql`select sluice.start_flow('fan', '[1, 2, 3, 4]'::jsonb)`,
    isLimitError(
      /^Cannot start map step "each" of run [0-9a-f-]{36}: it maps over 4 elements, more than the limit of 3 tasks \(max_map_tasks\)$/,
    ),
  );
  assert.deepEqual(await rowCounts(db.sql), { runs: 0, tasks: 0, completed: 0 });

  // The default cap refuses a root map of 100,000 elements from one call.
  await compile(db.sql, {
    ...definition(spec),
    flow_slug: "wide",
    routes: definition({ ...spec, slug: "wide" }).routes,
  });
  await assert.rejects(
    db.sql`select sluice.start_flow('wide', (select jsonb_agg(i) from generate_series(1, 100000) i))`,
    isLimitError(/it maps over 100000 elements, more than the limit of 10000 tasks/),
  );
  assert.equal((await rowCounts(db.sql)).tasks, 0);

  // A dependent map: the completion of its source is refused, the task stays started.
  const workerId = await registerWorker(db.sql, "fan", "fan");
  await db.sql`select sluice.start_flow('fan', '[1]'::jsonb)`;
  const tasks = await readAndClaim(db.sql, "fan", workerId, "fan");
  const list = tasks.find((t) => t.step_slug === "list")!;
  await assert.rejects(
    db.sql`select sluice.complete_task(${list.run_id}, 'list', 0, ${list.attempt}, ${list.worker_id},
      '[1, 2, 3, 4, 5]'::jsonb)`,
    isLimitError(
      /^Cannot start map step "again" of run .*: it maps over 5 elements, more than the limit of 3 tasks/,
    ),
  );
  const [state] = await db.sql`
    select status from sluice.step_tasks where step_slug = 'list' and run_id = ${list.run_id}`;
  assert.equal(state.status, "started");
});

Deno.test("limit options are checked at compilation: whole numbers >= 1", async () => {
  await using db = await freshDatabase();
  for (const option of ["max_input_bytes", "max_output_bytes", "max_map_tasks"]) {
    await assert.rejects(
      compileLimited(db.sql, { [option]: 0 }),
      new RegExp(`options\\.${option} of flow "limited" must be a whole number >= 1, got 0`),
    );
  }
});
