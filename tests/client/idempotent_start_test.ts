// Idempotent starts (docs/flow_control.md#idempotent-starts): the same name and key return one
// run, under concurrent starts from many connections, inside the caller's transaction, until the
// run is pruned; the same key with another input is refused; bad keys are refused before writing.
import assert from "node:assert/strict";
import { cancelRun, startFlow } from "../../src/client/mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { IdempotencyConflictError, StartOptionError } from "../../src/dsl/start_options.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { waitUntil } from "../_support.ts";

const flow = new Flow<{ order: number }>({ slug: "webhook" }).step({ slug: "take" }, () => 1);

async function counts(db: TestDatabase): Promise<{ runs: number; keys: number; messages: number }> {
  const [row] = await db.sql<{ runs: number; keys: number; messages: number }[]>`
    select (select count(*)::int from sluice.runs) as runs,
      (select count(*)::int from sluice.idempotency_keys) as keys,
      (select count(*)::int from pgmq.q_webhook) as messages`;
  return row;
}

Deno.test("startFlow() with an idempotency key returns the run the key started", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const first = await startFlow(db.sql, flow, { order: 7 }, { idempotencyKey: "evt_1" });
  const again = await startFlow(db.sql, flow, { order: 7 }, { idempotencyKey: "evt_1" });
  const other = await startFlow(db.sql, flow, { order: 7 }, { idempotencyKey: "evt_2" });
  const plain = await startFlow(db.sql, flow, { order: 7 });
  assert.equal(again, first);
  assert.notEqual(other, first);
  assert.notEqual(plain, first);
  assert.deepEqual(await counts(db), { runs: 3, keys: 2, messages: 3 });
  // The key is scoped to the name started: a start by another name is another start.
  await db.sql`insert into sluice.aliases (alias, flow_slug) values ('hooks', 'webhook')`;
  const viaAlias = await startFlow(db.sql, "hooks", { order: 7 }, { idempotencyKey: "evt_1" });
  assert.notEqual(viaAlias, first);
  assert.equal(
    await startFlow(db.sql, "hooks", { order: 7 }, { idempotencyKey: "evt_1" }),
    viaAlias,
  );
});

Deno.test("20 concurrent idempotent starts from 20 connections make one run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const clients = Array.from({ length: 20 }, () => db.connect(1));
  // The first start holds its key uncommitted while the other 19 start: each must wait for it
  // (seen in pg_stat_activity) instead of creating a run of its own; all return its run.
  let commitFirst!: () => void;
  const firstMayCommit = new Promise<void>((resolve) => commitFirst = resolve);
  let firstStarted!: (id: string) => void;
  const firstId = new Promise<string>((resolve) => firstStarted = resolve);
  const first = clients[0].begin(async (tx) => {
    const id = await startFlow(tx, flow, { order: 1 }, { idempotencyKey: "burst" });
    firstStarted(id);
    await firstMayCommit;
    return id;
  });
  const runId = await firstId;
  const others = clients.slice(1).map((sql) =>
    startFlow(sql, flow, { order: 1 }, { idempotencyKey: "burst" })
  );
  await waitUntil(async () => {
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    return row.n === 19;
  }, "the 19 other starts waiting for the first one's key");
  commitFirst();
  assert.deepEqual(await Promise.all([first, ...others]), Array(20).fill(runId));
  assert.deepEqual(await counts(db), { runs: 1, keys: 1, messages: 1 });
});

Deno.test("when the first start rolls back while 9 others wait for its key, one of them creates the run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const clients = Array.from({ length: 10 }, () => db.connect(1));
  let rollBackFirst!: () => void;
  const firstMayEnd = new Promise<void>((resolve) => rollBackFirst = resolve);
  let firstStarted!: (id: string) => void;
  const firstId = new Promise<string>((resolve) => firstStarted = resolve);
  const first = clients[0].begin(async (tx) => {
    firstStarted(await startFlow(tx, flow, { order: 2 }, { idempotencyKey: "undone" }));
    await firstMayEnd;
    throw new Error("the caller's own write failed");
  });
  const undone = await firstId;
  const others = clients.slice(1).map((sql) =>
    startFlow(sql, flow, { order: 2 }, { idempotencyKey: "undone" })
  );
  await waitUntil(async () => {
    const [row] = await db.sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`;
    return row.n === 9;
  }, "the 9 other starts waiting for the first one's key");
  rollBackFirst();
  await assert.rejects(first, /the caller's own write failed/);
  const ids = await Promise.all(others);
  assert.equal(new Set(ids).size, 1, `the waiters made ${new Set(ids).size} runs`);
  assert.notEqual(ids[0], undone);
  assert.deepEqual(await counts(db), { runs: 1, keys: 1, messages: 1 });
});

Deno.test("20 connections racing the same 5 keys make one run per key", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const clients = Array.from({ length: 20 }, () => db.connect(1));
  // Each connection is open before the race, so that the starts reach the database together.
  await Promise.all(clients.map((sql) => sql`select 1`));
  const keys = ["a", "b", "c", "d", "e"];
  // Each connection starts every key, from a different first key, all at once.
  const ids = await Promise.all(clients.map(async (sql, i) => {
    const mine: Record<string, string> = {};
    for (let k = 0; k < keys.length; k++) {
      const key = keys[(i + k) % keys.length];
      mine[key] = await startFlow(sql, flow, { order: 1 }, { idempotencyKey: key });
    }
    return mine;
  }));
  for (const key of keys) {
    assert.equal(new Set(ids.map((mine) => mine[key])).size, 1, `key ${key} made several runs`);
  }
  assert.equal(new Set(keys.map((key) => ids[0][key])).size, 5);
  assert.deepEqual(await counts(db), { runs: 5, keys: 5, messages: 5 });
});

Deno.test("a rolled-back idempotent start leaves no key: the next start creates the run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  let rolledBack = "";
  await assert.rejects(
    db.sql.begin(async (tx) => {
      rolledBack = await startFlow(tx, flow, { order: 3 }, { idempotencyKey: "order-3" });
      throw new Error("the caller's own write failed");
    }),
    /the caller's own write failed/,
  );
  assert.deepEqual(await counts(db), { runs: 0, keys: 0, messages: 0 });
  const runId = await startFlow(db.sql, flow, { order: 3 }, { idempotencyKey: "order-3" });
  assert.notEqual(runId, rolledBack);
  assert.deepEqual(await counts(db), { runs: 1, keys: 1, messages: 1 });
});

Deno.test("the same key with another input throws IdempotencyConflictError and writes nothing", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const runId = await startFlow(db.sql, flow, { order: 7 }, { idempotencyKey: "order-7" });
  const error = await assert.rejects(
    startFlow(db.sql, flow, { order: 8 }, { idempotencyKey: "order-7" }),
    (error: unknown) => {
      assert.ok(error instanceof IdempotencyConflictError);
      assert.equal(error.flowRef, "webhook");
      assert.equal(error.idempotencyKey, "order-7");
      assert.equal(error.runId, runId);
      assert.match(
        error.message,
        new RegExp(`idempotency key "order-7" already started run ${runId} with another input`),
      );
      return true;
    },
  );
  assert.equal(error, undefined);
  // Key order inside the input does not make it another input.
  assert.equal(
    await startFlow(db.sql, "webhook", JSON.parse('{"order":7}'), { idempotencyKey: "order-7" }),
    runId,
  );
  assert.deepEqual(await counts(db), { runs: 1, keys: 1, messages: 1 });
});

Deno.test("a bad idempotency key is refused, naming it, before anything is written", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  for (const key of ["", "k".repeat(256), 7, null]) {
    await assert.rejects(
      startFlow(db.sql, flow, { order: 1 }, { idempotencyKey: key as string }),
      (error: unknown) => {
        assert.ok(error instanceof StartOptionError, String(error));
        assert.equal(error.option, "idempotencyKey");
        assert.equal(error.value, key);
        assert.match(error.message, /idempotencyKey must be a string of 1 to 255 characters, got/);
        return true;
      },
    );
  }
  // 255 characters of four bytes each is within the limit: it counts characters.
  await startFlow(db.sql, flow, { order: 1 }, { idempotencyKey: "😀".repeat(255) });
  // The SQL path refuses the same values itself.
  for (
    const [options, message] of [
      [{ idempotency_key: "" }, /idempotency_key must be a string of 1 to 255 characters, got ""/],
      [{ idempotency_key: 7 }, /idempotency_key must be a string of 1 to 255 characters, got 7/],
      [{ idempotency_key: "k", priority_typo: 1 }, /unknown start option "priority_typo"/],
      [["idempotency_key"], /options must be a JSON object, got array/],
    ] as const
  ) {
    await assert.rejects(
      db.sql`select sluice.start_flow('webhook', '{"order":1}'::jsonb, null, ${
        db.sql.json(options as never)
      })`,
      message,
    );
  }
  assert.deepEqual(await counts(db), { runs: 1, keys: 1, messages: 1 });
});

Deno.test("the SQL start paths take the key: start_flow, start_flow_version and start_run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const options = db.sql.json({ idempotency_key: "sql-1" });
  const [a] = await db.sql`
    select sluice.start_flow('webhook', '{"order":1}'::jsonb, null, ${options}) as id`;
  const [b] = await db.sql`
    select sluice.start_flow_version('webhook', '{"order":1}'::jsonb, null, ${options}) as id`;
  const [c] = await db
    .sql`select sluice.start_run('webhook', '{"order":1}'::jsonb, ${options}) as id`;
  assert.equal(b.id, a.id);
  assert.equal(c.id, a.id);
  // The three-argument calls are the plain starts they always were.
  const [d] = await db.sql`select sluice.start_flow('webhook', '{"order":1}'::jsonb) as id`;
  assert.notEqual(d.id, a.id);
  await assert.rejects(
    db.sql`select sluice.start_run('webhook', '{"order":2}'::jsonb, ${options})`,
    (error: { code?: string; message: string }) =>
      error.code === "SLI01" && /already started run/.test(error.message),
  );
});

Deno.test("a key is kept as long as its run: prune deletes it with the finished run", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const first = await startFlow(db.sql, flow, { order: 9 }, { idempotencyKey: "order-9" });
  await cancelRun(db.sql, first);
  // Finished but not pruned: the key still returns the run.
  assert.equal(await startFlow(db.sql, flow, { order: 9 }, { idempotencyKey: "order-9" }), first);
  await db.sql`call sluice.prune_data_older_than('0 seconds', 100, null)`;
  assert.deepEqual((await counts(db)).keys, 0);
  const second = await startFlow(db.sql, flow, { order: 9 }, { idempotencyKey: "order-9" });
  assert.notEqual(second, first);
});
