// Concurrency limits per key (docs/flow_control.md#concurrency-limits), in one process: tasks over
// the limit are held with no message, each freed slot (completion, failure, cancel, retry) sends
// the next held task of its key in the same transaction, and bad limits are refused before
// anything is written. The races between worker processes are in concurrency_race_test.ts.
import assert from "node:assert/strict";
import { cancelRun, retryRun, startFlow, waitForRun } from "../../src/client/mod.ts";
import { compileFlow, extractDefinition } from "../../src/admin/mod.ts";
import { FlowDefinitionError } from "../../src/dsl/errors.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { StartOptionError } from "../../src/dsl/start_options.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { scaled, waitUntil } from "../_support.ts";
import { testWorker } from "../worker/_helpers.ts";

/** Whether runs started with `fail: true` fail: the retry test lets them succeed. */
const failing = { on: true };

const limited = new Flow<{ customer: string; fail?: boolean }>({ slug: "limited", maxAttempts: 1 })
  .step({ slug: "call", concurrency: { limit: 2, key: "customer" } }, (input) => {
    if (input.fail && failing.on) throw new Error("refused");
    return input.customer;
  });

interface KeyRow {
  concurrency_key: string;
  concurrency_limit: number;
  slots_in_use: number;
  held: number;
}

async function slots(db: TestDatabase): Promise<KeyRow[]> {
  const rows = await db.sql<KeyRow[]>`
    select concurrency_key, concurrency_limit, slots_in_use, held
    from sluice.concurrency_slots order by concurrency_key`;
  return rows.map((row) => ({ ...row }));
}

async function messages(db: TestDatabase): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from pgmq.q_limited`;
  return n;
}

Deno.test("a limited step sends at most its limit of tasks per key and holds the rest with no message", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, limited);
  const runs: string[] = [];
  for (let i = 0; i < 5; i++) runs.push(await startFlow(db.sql, limited, { customer: "a" }));
  await startFlow(db.sql, limited, { customer: "b" });
  assert.deepEqual(await slots(db), [
    { concurrency_key: "a", concurrency_limit: 2, slots_in_use: 2, held: 3 },
    { concurrency_key: "b", concurrency_limit: 2, slots_in_use: 1, held: 0 },
  ]);
  assert.equal(await messages(db), 3);
  const [held] = await db.sql`
    select count(*)::int as n from sluice.step_tasks
    where message_id is null and status = 'queued' and concurrency_key = 'a'`;
  assert.equal(held.n, 3);

  // Cancelling a run that holds a slot sends the oldest held task of its key, in the cancel.
  await cancelRun(db.sql, runs[0]);
  assert.deepEqual((await slots(db))[0], {
    concurrency_key: "a",
    concurrency_limit: 2,
    slots_in_use: 2,
    held: 2,
  });
  const [sent] = await db.sql`
    select message_id is not null as sent from sluice.step_tasks where run_id = ${runs[2]}`;
  assert.equal(sent.sent, true);
  // Cancelling a held run frees nothing and sends nothing.
  await cancelRun(db.sql, runs[4]);
  assert.deepEqual((await slots(db))[0].held, 1);
  assert.equal(await messages(db), 3);
});

Deno.test("a worker runs a limited step's backlog to the end: completions and failures free slots, a retry is held again", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, limited);
  const runs: string[] = [];
  for (let i = 0; i < 8; i++) {
    runs.push(await startFlow(db.sql, limited, { customer: "a", fail: i % 3 === 0 }));
  }
  const shared = new Flow<{ n: number }>({ slug: "shared" })
    .step({ slug: "one", concurrency: { limit: 1 } }, (input) => input.n);
  await compileFlow(db.sql, shared);
  const sharedRuns = [];
  for (let n = 0; n < 4; n++) sharedRuns.push(await startFlow(db.sql, shared, { n }));
  assert.deepEqual((await slots(db)).map((row) => [row.concurrency_key, row.slots_in_use]), [
    ["", 1],
    ["a", 2],
  ]);

  await using worker = await testWorker(limited, db, { maxConcurrent: 4 });
  await using sharedWorker = await testWorker(shared, db, { maxConcurrent: 4 });
  await waitUntil(
    async () =>
      (await db.sql`select 1 from sluice.runs where status not in ('completed', 'failed')`)
        .length === 0,
    "every run finished",
    20_000,
    () => slots(db),
  );
  const statuses = await db.sql<{ status: string }[]>`
    select status from sluice.runs where flow_slug = 'limited' order by started_at, run_id`;
  assert.equal(statuses.filter((row) => row.status === "failed").length, 3);
  assert.deepEqual(await slots(db), []);
  // Every held task was sent by the commit that freed its slot, none by the sweep.
  assert.equal(worker.logs.find("info", "held tasks released").length, 0);

  // A retried run's task is held again, and sent by the retry's commit when its key has room.
  failing.on = false;
  await retryRun(db.sql, runs[0]);
  assert.deepEqual(await waitForRun(db.sql, runs[0], { timeoutMs: scaled(10_000) }), {
    call: "a",
  });
  for (const id of sharedRuns) {
    assert.ok(await waitForRun(db.sql, id, { timeoutMs: scaled(10_000) }) !== undefined);
  }
  void sharedWorker;
});

Deno.test("bad concurrency limits are refused before anything is written", async () => {
  for (const bad of [0, -1, 1.5, "2", null, Infinity]) {
    assert.throws(
      () =>
        new Flow<{ k: string }>({ slug: "bad" }).step(
          { slug: "s", concurrency: { limit: bad as number } },
          () => 1,
        ),
      (error) =>
        error instanceof FlowDefinitionError && error.option === "concurrency" &&
        error.message.includes("concurrency must be an object { limit, key? }"),
    );
  }
  for (const bad of [{ limit: 2, key: "" }, { limit: 2, key: "a..b" }, { limit: 2, other: 1 }, 2]) {
    assert.throws(
      () =>
        new Flow<{ k: string }>({ slug: "bad" }).step(
          // deno-lint-ignore no-explicit-any
          { slug: "s", concurrency: bad as any },
          () => 1,
        ),
      FlowDefinitionError,
    );
  }

  for (
    const bad of [
      { limit: 0, period: 1 },
      { limit: 5, period: 0 },
      { limit: 5, period: -1 },
      { limit: 5.5, period: 1 },
      { limit: 5 },
      { limit: 5, period: 1, burst: 2 },
    ]
  ) {
    assert.throws(
      () =>
        new Flow<{ k: string }>({ slug: "bad" }).step(
          // deno-lint-ignore no-explicit-any
          { slug: "s", rateLimit: bad as any },
          () => 1,
        ),
      (error) => error instanceof FlowDefinitionError && error.option === "rateLimit",
    );
  }
  // Both limits of a step count under one key.
  assert.throws(
    () =>
      new Flow<{ k: string }>({ slug: "bad" }).step({
        slug: "s",
        concurrency: { limit: 2, key: "k" },
        rateLimit: { limit: 5, period: 1 },
      }, () => 1),
    /give both the same key, got "k" and undefined/,
  );

  await using db = await freshDatabase();
  const good = extractDefinition(
    new Flow<{ k: string }>({ slug: "sqlbad" }).step({
      slug: "s",
      concurrency: { limit: 2, key: "k" },
    }, () => 1),
  );
  assert.deepEqual(
    { limit: good.steps[0].options.concurrency_limit, key: good.steps[0].options.concurrency_key },
    { limit: 2, key: ["k"] },
  );
  const cases: [unknown, unknown, RegExp][] = [
    [0, null, /options\.concurrency_limit of step "s" must be a whole number >= 1, got 0/],
    [-3, null, /must be a whole number >= 1, got -3/],
    [2.5, null, /must be a whole number >= 1, got 2\.5/],
    [2, [], /options\.concurrency_key of step "s" must be a non-empty array/],
    [null, ["k"], /options\.concurrency_key of step "s" needs options\.concurrency_limit/],
  ];
  const rateCases: [unknown, unknown, RegExp][] = [
    [0, 1, /options\.rate_limit of step "s" must be a whole number >= 1, got 0/],
    [5, -1, /options\.rate_period of step "s" must be a whole number >= 1, got -1/],
    [5, null, /options\.rate_limit and options\.rate_period of step "s" go together/],
  ];
  for (const [limit, period, message] of rateCases) {
    const definition = structuredClone(good) as unknown as {
      steps: { options: Record<string, unknown> }[];
    };
    definition.steps[0].options.rate_limit = limit;
    definition.steps[0].options.rate_period = period;
    await assert.rejects(
      db.sql`select sluice.ensure_flow_compiled(${db.sql.json(definition as never)}, 'production')`,
      (error: Error & { code?: string }) => error.code === "22023" && message.test(error.message),
    );
  }
  for (const [limit, key, message] of cases) {
    const definition = structuredClone(good) as unknown as {
      steps: { options: Record<string, unknown> }[];
    };
    definition.steps[0].options.concurrency_limit = limit;
    definition.steps[0].options.concurrency_key = key;
    await assert.rejects(
      db.sql`select sluice.ensure_flow_compiled(${db.sql.json(definition as never)}, 'production')`,
      (error: Error & { code?: string }) => error.code === "22023" && message.test(error.message),
    );
  }
  const [{ flows }] = await db.sql`select count(*)::int as flows from sluice.flows`;
  assert.equal(flows, 0);

  await compileFlow(db.sql, limited);
  await assert.rejects(
    startFlow(db.sql, limited, { customer: "a" }, { concurrencyKey: "" }),
    (error) => error instanceof StartOptionError && error.option === "concurrencyKey",
  );
  await assert.rejects(
    db.sql`select sluice.start_flow('limited', '{"customer": "a"}', null, '{"concurrency_key": 7}')`,
    /concurrency_key must be a string of 1 to 255 characters, got 7/,
  );
  const [{ runs }] = await db.sql`select count(*)::int as runs from sluice.runs`;
  assert.equal(runs, 0);
});

Deno.test("a step with no key path counts under the start's concurrencyKey", async () => {
  await using db = await freshDatabase();
  const tenant = new Flow<{ n: number }>({ slug: "tenant" })
    .step({ slug: "work", concurrency: { limit: 1 } }, (input) => input.n);
  await compileFlow(db.sql, tenant);
  await startFlow(db.sql, tenant, { n: 1 }, { concurrencyKey: "t1" });
  await startFlow(db.sql, tenant, { n: 2 }, { concurrencyKey: "t1" });
  await startFlow(db.sql, tenant, { n: 3 }, { concurrencyKey: "t2" });
  await startFlow(db.sql, tenant, { n: 4 });
  assert.deepEqual(
    (await slots(db)).map((row) => [row.concurrency_key, row.slots_in_use, row.held]),
    [["", 1, 0], ["t1", 1, 1], ["t2", 1, 0]],
  );
});

Deno.test("a debounced start takes its concurrency key from the input: an explicit concurrencyKey is refused, before anything is written", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, limited);
  const debounce = { key: "burst", windowSeconds: 1 };
  await assert.rejects(
    startFlow(db.sql, limited, { customer: "a" }, { debounce, concurrencyKey: "tenant" }),
    (error) =>
      error instanceof StartOptionError && error.option === "concurrencyKey" &&
      /absent with debounce/.test(error.message),
  );
  await assert.rejects(
    db.sql`select sluice.start_flow('limited', '{"customer": "a"}', null,
      '{"debounce": {"key": "burst", "window_seconds": 1}, "concurrency_key": "tenant"}')`,
    (error: Error & { code?: string }) =>
      error.code === "22023" &&
      /debounce and concurrency_key cannot be combined/.test(error.message),
  );
  // The step's key path works with debounce: the pending start is taken.
  await startFlow(db.sql, limited, { customer: "a" }, { debounce });
  const [{ runs, pending }] = await db.sql`
    select (select count(*)::int from sluice.runs) as runs,
      (select count(*)::int from sluice.debounced_starts) as pending`;
  assert.deepEqual({ runs, pending }, { runs: 0, pending: 1 });
});
