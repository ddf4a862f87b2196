import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import { waitUntilBlocked } from "../pgmq/_pgmq.ts";
import {
  compile,
  type Definition,
  definition,
  type FlowSpec,
  registerWorker,
  type Sql,
  startFlow,
} from "./_fixtures.ts";

const BASE: FlowSpec = {
  slug: "shop",
  timeout: 30,
  steps: [
    { slug: "load" },
    { slug: "items", type: "map", deps: ["load"], mapSource: "load" },
    { slug: "total", deps: ["items", "load"], if: { load: { ok: true } } },
  ],
};

async function counts(sql: Sql) {
  const [row] = await sql`
    select (select count(*) from sluice.flows)::int as flows,
      (select count(*) from sluice.steps)::int as steps,
      (select count(*) from sluice.deps)::int as deps,
      (select count(*) from sluice.queues)::int as queues,
      (select count(*) from sluice.aliases)::int as aliases,
      (select count(*) from pgmq.meta)::int as pgmq_queues
  `;
  return { ...row };
}

Deno.test("ensure_flow_compiled() creates an absent flow with its queue, registry row and self-alias", async () => {
  await using db = await freshDatabase();
  assert.deepEqual(await compile(db.sql, definition(BASE)), {
    outcome: "compiled",
    differences: [],
    generation: 1,
  });
  assert.deepEqual(await counts(db.sql), {
    flows: 1,
    steps: 3,
    deps: 3,
    queues: 1,
    aliases: 1,
    pgmq_queues: 1,
  });
  const [queue] = await db.sql`select * from sluice.queues`;
  assert.deepEqual(
    { name: queue.queue_name, ownership: queue.ownership, owner: queue.owner_flow_slug },
    { name: "shop", ownership: "private", owner: "shop" },
  );
  const [flow] = await db
    .sql`select opt_max_attempts, opt_base_delay, opt_timeout from sluice.flows`;
  assert.deepEqual({ ...flow }, { opt_max_attempts: 3, opt_base_delay: 1, opt_timeout: 30 });
});

Deno.test("ensure_flow_compiled() verifies an identical shape and applies changed runtime options", async () => {
  await using db = await freshDatabase();
  await compile(db.sql, definition(BASE));
  const tuned: FlowSpec = {
    ...BASE,
    timeout: 90,
    maxAttempts: 7,
    steps: BASE.steps.map((s) => s.slug === "items" ? { ...s, timeout: 5, baseDelay: 2 } : s),
  };
  assert.deepEqual(await compile(db.sql, definition(tuned)), {
    outcome: "verified",
    differences: [],
    generation: 1,
  });
  const [flow] = await db.sql`select opt_max_attempts, opt_timeout from sluice.flows`;
  assert.deepEqual({ ...flow }, { opt_max_attempts: 7, opt_timeout: 90 });
  const [step] = await db
    .sql`select opt_timeout, opt_base_delay from sluice.steps where step_slug = 'items'`;
  assert.deepEqual({ ...step }, { opt_timeout: 5, opt_base_delay: 2 });
});

Deno.test("ensure_flow_compiled() reports a mismatch for each shape change and changes nothing in production", async () => {
  await using db = await freshDatabase();
  await compile(db.sql, definition(BASE));
  const before = await counts(db.sql);
  const changes: [string, FlowSpec, RegExp][] = [
    [
      "dependency",
      { ...BASE, steps: BASE.steps.map((s) => s.slug === "total" ? { ...s, deps: ["items"] } : s) },
      /step 2 \("total"\): deps compiled \["items", "load"\], definition \["items"\]/,
    ],
    [
      "step type",
      {
        ...BASE,
        steps: BASE.steps.map((s) =>
          s.slug === "items" ? { ...s, type: "single", mapSource: null } : s
        ),
      },
      /step 1 \("items"\): step_type compiled "map", definition "single"/,
    ],
    [
      "condition",
      { ...BASE, steps: BASE.steps.map((s) => s.slug === "total" ? { ...s, if: null } : s) },
      /required_input_pattern compiled \{"load": \{"ok": true\}\}, definition null/,
    ],
    [
      "order",
      {
        ...BASE,
        steps: [{ slug: "load" }, { slug: "other" }, ...BASE.steps.slice(1)],
      },
      /step 1 \("items"\): step_slug compiled "items", definition "other"/,
    ],
    [
      "queue mode",
      { ...BASE, queueMode: "step" },
      /queue mode: compiled flow, definition step/,
    ],
  ];
  for (const [what, spec, pattern] of changes) {
    const result = await compile(db.sql, definition(spec));
    assert.equal(result.outcome, "mismatch", what);
    assert.ok(result.differences.some((d) => pattern.test(d)), `${what}: ${result.differences}`);
  }
  assert.deepEqual(await counts(db.sql), before);
});

Deno.test("two concurrent startups of a new flow converge: one compiled, one verified", async () => {
  await using db = await freshDatabase();
  const first = db.connect(1);
  const second = db.connect(1);
  const [{ pid }] = await second`select pg_backend_pid() as pid`;

  // Force the overlap: the second startup runs while the first has compiled but not committed.
  // What serializes them is the flow lock (then the queue-name lock) of ensure_flow_compiled in
  // migration 20261130001100: without both, the second does not see the uncommitted flow and
  // fails on flows_pkey once the first commits.
  await first`begin`;
  assert.equal((await compile(first, definition(BASE))).outcome, "compiled");
  const later = compile(second, definition(BASE));
  await waitUntilBlocked(db.sql, pid);
  await first`commit`;
  assert.equal((await later).outcome, "verified");
  assert.equal((await counts(db.sql)).flows, 1);
});

/** A one-step routed flow whose step runs on the shared queue `queue`. */
function routed(slug: string, queue: string): Definition {
  const def = definition({ slug, steps: [{ slug: "work" }] });
  return { ...def, queue_mode: "routed", routes: [{ step_slug: "work", queue_name: queue }] };
}

Deno.test("a routed definition (explicit shared queues) is refused naming the flow, in every environment, and nothing is written", async () => {
  await using db = await freshDatabase();
  // A shared queue name, a private queue's name, a name outside the queue-name rule: the
  // refusal comes first, whatever the route.
  for (const queue of ["shared_jobs", "shop", "Orders", "o".repeat(48)]) {
    for (const environment of ["production", "development"]) {
      await assert.rejects(
        compile(db.sql, routed("router", queue), environment),
        (error: Error & { code?: string; hint?: string }) => {
          assert.equal(error.code, "0A000", queue);
          assert.equal(
            error.message,
            'Cannot compile flow "router": queue_mode "routed" (explicit shared queues) is not ' +
              "supported, shared queues are not built",
          );
          assert.match(error.hint ?? "", /withStepQueues\(\).*docs\/integration\/back_office\.md/);
          return true;
        },
        `${queue} (${environment})`,
      );
    }
  }
  assert.deepEqual(await counts(db.sql), {
    flows: 0,
    steps: 0,
    deps: 0,
    queues: 0,
    aliases: 0,
    pgmq_queues: 0,
  });
  // Structure is validated first: a malformed routed definition gets its own error.
  await assert.rejects(
    compile(db.sql, { ...routed("router", "jobs"), routes: [] }),
    /Invalid flow definition: routes of flow "router" must list one/,
  );
  // A plain and a step-queued flow still compile.
  assert.equal((await compile(db.sql, definition(BASE))).outcome, "compiled");
  const stepQueued = definition({ slug: "split", queueMode: "step", steps: [{ slug: "work" }] });
  assert.equal((await compile(db.sql, stepQueued)).outcome, "compiled");
});

Deno.test("the one queue-name rule: ASCII lowercase letters, digits and underscores, at most 47 bytes", async () => {
  await using db = await freshDatabase();
  // Twins of "orders", punctuation, the empty name; 47 two-byte letters (47 characters but 94
  // bytes); three names that differ only after the 63-byte identifier limit.
  const invalid = [
    "\u043erders", // Cyrillic о
    "\uff4frders", // full-width ｏ
    "or\u200bders", // zero-width space
    "Orders",
    'ord"ers',
    "ord'ers",
    "ord ers",
    "ord/ers",
    "ord.ers",
    "",
    "o".repeat(48),
    "\u00e9".repeat(47),
    ..."abc".split("").map((c) => "\u00e9".repeat(31) + c),
  ];
  const valid = ["orders", "orders_2", "o".repeat(47)];
  const [{ answers }] = await db.sql`
    select array_agg(sluice.is_valid_queue_name(q) order by ord) as answers
    from unnest(${[...invalid, ...valid]}::text[]) with ordinality as u(q, ord)`;
  assert.deepEqual(answers, [...invalid.map(() => false), ...valid.map(() => true)]);
});

Deno.test("an invalid definition is rejected with the offending value and leaves nothing behind", async () => {
  await using db = await freshDatabase();
  const cases: [string, (d: Definition) => void, RegExp][] = [
    ["bad slug", (d) => d.flow_slug = "9lives", /flow_slug "9lives" is not a valid slug/],
    [
      "reserved step",
      (d) => d.steps[0].step_slug = "run",
      /has slug "run", which is not a valid step slug/,
    ],
    [
      "unknown dep",
      (d) => d.steps[2].deps = ["ghost"],
      /step "total" depends on "ghost", which is not an earlier step/,
    ],
    [
      "bad option",
      (d) => d.steps[0].options.max_attempts = 0,
      /options.max_attempts of step "load" must be a whole number >= 1, got 0/,
    ],
    [
      "timeout over the longest worker timer",
      (d) => d.steps[0].options.timeout = 2592000,
      /options.timeout of step "load" must be at most 2147483 seconds \(about 24.8 days, the longest worker timer\), got 2592000/,
    ],
    [
      "bad enum",
      (d) => d.steps[0].when_unmet = "maybe",
      /when_unmet of step "load" must be one of/,
    ],
    [
      "route",
      (d) => d.routes[1].queue_name = "elsewhere",
      /route of step "items" of flow "shop" is "elsewhere", but SQL derives "shop"/,
    ],
    ["dup step", (d) => d.steps[1].step_slug = "LOAD", /has step "LOAD" twice/],
    [
      // sluice's own text: PGMQ 1.5.1 would say "maximum length is 48 characters".
      "long queue",
      (d) => {
        d.flow_slug = "s".repeat(48);
        d.routes = d.routes.map((r) => ({ ...r, queue_name: d.flow_slug }));
      },
      /queue "s{48}" of step "load" of flow "s{48}" \(48 bytes\) must be ASCII lowercase letters, digits and underscores, at most 47 bytes$/,
    ],
    ["no steps", (d) => {
      d.steps = [];
      d.routes = [];
    }, /flow "shop" has no steps/],
  ];
  for (const [what, mutate, pattern] of cases) {
    const def = definition(BASE);
    mutate(def);
    await assert.rejects(compile(db.sql, def), pattern, what);
  }
  await assert.rejects(
    compile(db.sql, definition(BASE), "staging"),
    /environment must be 'production' or 'development', got 'staging'/,
  );
  assert.deepEqual(await counts(db.sql), {
    flows: 0,
    steps: 0,
    deps: 0,
    queues: 0,
    aliases: 0,
    pgmq_queues: 0,
  });
});

Deno.test("compilation rejects a PGMQ queue that exists unowned, even spelled in another case, and creates nothing", async () => {
  await using db = await freshDatabase();
  await db.sql`select pgmq.create('Shop')`;
  await assert.rejects(
    compile(db.sql, definition(BASE)),
    /queue "shop" of step "load" already exists in PGMQ \(as "Shop"\) but no sluice flow owns it/,
  );
  const step: FlowSpec = {
    slug: "split",
    queueMode: "step",
    steps: [{ slug: "a" }, { slug: "b" }],
  };
  await db.sql`select pgmq.create('split__b')`;
  await assert.rejects(
    compile(db.sql, definition(step)),
    /queue "split__b" of step "b" already exists in PGMQ/,
  );
  const after = await counts(db.sql);
  assert.deepEqual({ flows: after.flows, queues: after.queues, pgmq: after.pgmq_queues }, {
    flows: 0,
    queues: 0,
    pgmq: 2,
  });
});

Deno.test("a step-queued flow gets exactly its step queues, private to it", async () => {
  await using db = await freshDatabase();
  const spec: FlowSpec = {
    slug: "a_rather_long_flow_slug_for_names",
    queueMode: "step",
    steps: [{ slug: "short" }, { slug: "a_step_slug_that_is_too_long" }],
  };
  assert.equal((await compile(db.sql, definition(spec))).outcome, "compiled");
  const queues = await db
    .sql`select queue_name, ownership, owner_flow_slug from sluice.queues order by 1`;
  assert.deepEqual(queues.map((q) => [q.queue_name, q.ownership, q.owner_flow_slug]), [
    ["a_rather_long_flow_slug_for_names__1", "private", spec.slug],
    ["a_rather_long_flow_slug_for_names__short", "private", spec.slug],
  ]);
  const [meta] = await db.sql`select count(*)::int as n from pgmq.meta`;
  assert.equal(meta.n, 2, "no unused default queue");
});

Deno.test("SQL queue-name derivation: readable up to 47 characters, then the index fallback, then rejection", async () => {
  await using db = await freshDatabase();
  const flow40 = "f".repeat(40);
  const rows = await db.sql`
    select sluice.step_queue_name('Flow', 'Step', 0) as short,
      sluice.step_queue_name(${flow40}, 'abcde', 3) as exactly47,
      sluice.step_queue_name(${flow40}, 'abcdef', 3) as fallback
  `;
  assert.deepEqual({ ...rows[0] }, {
    short: "flow__step",
    exactly47: `${flow40}__abcde`,
    fallback: `${flow40}__3`,
  });
  await assert.rejects(
    db.sql`select sluice.step_queue_name(${"g".repeat(45)}, 'step', 12)`,
    /both exceed 47 characters/,
  );
});

Deno.test("development recompiles a changed flow only after its live workers drain", async () => {
  await using db = await freshDatabase();
  await compile(db.sql, definition(BASE));
  const runId = await startFlow(db.sql, "shop", {});
  const worker = await registerWorker(db.sql, "shop", "shop");
  const changed: FlowSpec = { ...BASE, steps: [{ slug: "load" }] };

  // A run in flight: refused, the worker left serving it.
  const refused = await compile(db.sql, definition(changed), "development");
  assert.deepEqual(
    { ...refused, differences: undefined },
    {
      outcome: "in_flight",
      in_flight_runs: 1,
      live_workers: 1,
      waiting_steps: 0,
      waiting: [],
      differences: undefined,
    },
  );
  const [kept] = await db.sql`select deprecated_at from sluice.workers where worker_id = ${worker}`;
  assert.equal(kept.deprecated_at, null, "not deprecated while a run is in flight");
  await db.sql`select sluice.cancel_run(${runId}, 'reshaping')`;

  const first = await compile(db.sql, definition(changed), "development");
  assert.equal(first.outcome, "draining");
  assert.equal(first.live_workers, 1);
  const [w] = await db.sql`select deprecated_at from sluice.workers where worker_id = ${worker}`;
  assert.ok(w.deprecated_at instanceof Date, "the old worker is told to drain");
  assert.equal((await counts(db.sql)).steps, 3, "nothing is deleted while it drains");

  await db.sql`select sluice.stop_worker(${worker})`;
  const second = await compile(db.sql, definition(changed), "development");
  assert.equal(second.outcome, "recompiled");
  assert.deepEqual(second.deleted_runs, { cancelled: 1 });
  assert.deepEqual(await counts(db.sql), {
    flows: 1,
    steps: 1,
    deps: 0,
    queues: 1,
    aliases: 1,
    pgmq_queues: 1,
  });
  const [runs] = await db.sql`select count(*)::int as n from sluice.runs`;
  assert.equal(runs.n, 0, "development recompilation replaces the flow's data");
});
