// Debounced starts (docs/flow_control.md#debounced-starts): starts of one name with the same
// debounce key collapse into one pending run, which takes the last committed start's input and
// starts once the key was quiet for the window; concurrent starts from many connections agree on
// one run; a rolled-back start leaves nothing; bad windows are refused before anything is written.
import assert from "node:assert/strict";
import { startFlow, waitForRun } from "../../src/client/mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { StartOptionError } from "../../src/dsl/start_options.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker } from "../worker/_helpers.ts";

const flow = new Flow<{ text: string }>({ slug: "autosave" })
  .step({ slug: "save" }, (input) => ({ saved: input.text }));

interface Pending {
  run_id: string;
  input: unknown;
  starts: number;
  due_in: number;
}

async function pending(db: TestDatabase): Promise<Pending[]> {
  return [
    ...await db.sql<Pending[]>`
      select run_id::text, input, starts,
        extract(epoch from due_at - clock_timestamp())::float8 as due_in
      from sluice.debounced_starts order by first_at`,
  ];
}

async function runCount(db: TestDatabase): Promise<number> {
  const [{ n }] = await db.sql<{ n: number }[]>`select count(*)::int as n from sluice.runs`;
  return n;
}

/** Makes every pending start due now and runs the sweep the heartbeat runs. */
async function sweepNow(db: TestDatabase): Promise<number> {
  await db.sql`update sluice.debounced_starts set due_at = clock_timestamp() - interval '1 second'`;
  const [{ started }] = await db.sql<{ started: number }[]>`
    select sluice.start_due_debounced() as started`;
  return started;
}

Deno.test("debounced starts of one key return one pending run, started with the last input", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const debounce = { key: "doc-1", windowSeconds: 600 };
  const first = await startFlow(db.sql, flow, { text: "a" }, { debounce });
  const second = await startFlow(db.sql, flow, { text: "ab" }, { debounce });
  const third = await startFlow(db.sql, flow, { text: "abc" }, { debounce });
  const other = await startFlow(db.sql, flow, { text: "x" }, {
    debounce: { key: "doc-2", windowSeconds: 600 },
  });
  assert.equal(second, first);
  assert.equal(third, first);
  assert.notEqual(other, first);
  // Nothing runs while the window is open.
  assert.equal(await runCount(db), 0);
  const rows = await pending(db);
  assert.deepEqual(rows.map(({ run_id, input, starts }) => ({ run_id, input, starts })), [
    { run_id: first, input: { text: "abc" }, starts: 3 },
    { run_id: other, input: { text: "x" }, starts: 1 },
  ]);
  // A sweep before the window closed starts nothing.
  const [{ early }] = await db.sql<{ early: number }[]>`
    select sluice.start_due_debounced() as early`;
  assert.equal(early, 0);

  assert.equal(await sweepNow(db), 2);
  const runs = await db.sql<{ run_id: string; input: unknown; started_via: string }[]>`
    select run_id::text, input, started_via from sluice.runs order by input ->> 'text'`;
  assert.deepEqual(runs.map((run) => ({ ...run })), [
    { run_id: first, input: { text: "abc" }, started_via: "autosave" },
    { run_id: other, input: { text: "x" }, started_via: "autosave" },
  ]);
  assert.deepEqual(await pending(db), []);
  // The next start of the key begins the next pending run.
  const next = await startFlow(db.sql, flow, { text: "abcd" }, { debounce });
  assert.notEqual(next, first);
});

Deno.test("each start restarts the window; maxWaitSeconds caps it from the first start", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  await startFlow(db.sql, flow, { text: "a" }, { debounce: { key: "k", windowSeconds: 100 } });
  const [before] = await pending(db);
  assert.ok(before.due_in > 90 && before.due_in <= 100, `due in ${before.due_in} s`);
  // A later start with a longer window pushes the due time out to its own window.
  await startFlow(db.sql, flow, { text: "b" }, { debounce: { key: "k", windowSeconds: 300 } });
  const [after] = await pending(db);
  assert.ok(after.due_in > 290, `due in ${after.due_in} s`);

  await startFlow(db.sql, flow, { text: "a" }, {
    debounce: { key: "capped", windowSeconds: 10, maxWaitSeconds: 20 },
  });
  // Pretend the first start came 15 s ago: a start now would push to now + 10 s, past the cap.
  await db.sql`
    update sluice.debounced_starts
    set first_at = first_at - interval '15 seconds', max_due_at = max_due_at - interval '15 seconds'
    where debounce_key = 'capped'`;
  await startFlow(db.sql, flow, { text: "b" }, {
    debounce: { key: "capped", windowSeconds: 10, maxWaitSeconds: 20 },
  });
  const [{ due_in }] = await db.sql<{ due_in: number }[]>`
    select extract(epoch from due_at - clock_timestamp())::float8 as due_in
    from sluice.debounced_starts where debounce_key = 'capped'`;
  assert.ok(due_in > 0 && due_in <= 5, `due in ${due_in} s: capped at first + 20 s`);
});

Deno.test("20 concurrent debounced starts from 20 connections make one run with the last committed input", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const clients = Array.from({ length: 20 }, () => db.connect(1));
  // Each start runs in its own transaction and reads, before committing, how many starts its
  // update made: the row lock orders the updates, so that count is the order of commits.
  const results = await Promise.all(clients.map((sql, i) =>
    sql.begin(async (tx) => {
      const runId = await startFlow(tx, flow, { text: `edit ${i}` }, {
        debounce: { key: "burst", windowSeconds: 600 },
      });
      const [{ starts }] = await tx<{ starts: number }[]>`
        select starts from sluice.debounced_starts where debounce_key = 'burst'`;
      return { runId, starts, text: `edit ${i}` };
    })
  ));
  const runIds = new Set(results.map((result) => result.runId));
  assert.equal(runIds.size, 1);
  assert.deepEqual(
    results.map((result) => result.starts).sort((a, b) => a - b),
    [
      ...Array(20).keys(),
    ].map((i) => i + 1),
  );
  const last = results.find((result) => result.starts === 20)!;
  const [row] = await pending(db);
  assert.deepEqual({ input: row.input, starts: row.starts }, {
    input: { text: last.text },
    starts: 20,
  });

  assert.equal(await sweepNow(db), 1);
  const runs = await db.sql<{ run_id: string; input: unknown }[]>`
    select run_id::text, input from sluice.runs`;
  assert.deepEqual(runs.map((run) => ({ ...run })), [{
    run_id: last.runId,
    input: { text: last.text },
  }]);
});

Deno.test("a rolled-back debounced start leaves nothing, and a held one is skipped by the sweep", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const debounce = { key: "tx", windowSeconds: 600 };
  await assert.rejects(
    db.sql.begin(async (tx) => {
      await startFlow(tx, flow, { text: "never" }, { debounce });
      throw new Error("roll back");
    }),
    /roll back/,
  );
  assert.deepEqual(await pending(db), []);

  const runId = await startFlow(db.sql, flow, { text: "kept" }, { debounce });
  await assert.rejects(
    db.sql.begin(async (tx) => {
      assert.equal(await startFlow(tx, flow, { text: "rolled back" }, { debounce }), runId);
      throw new Error("roll back");
    }),
    /roll back/,
  );
  assert.deepEqual(
    (await pending(db)).map(({ input, starts }) => ({ input, starts })),
    [{ input: { text: "kept" }, starts: 1 }],
  );

  // A start in progress holds the row: the sweep skips it instead of waiting, and the run starts
  // with that start's input on the next sweep once it committed.
  await db.sql`update sluice.debounced_starts set due_at = clock_timestamp() - interval '1 second'`;
  const holder = db.connect(1);
  let release!: () => void;
  const mayCommit = new Promise<void>((resolve) => release = resolve);
  let started!: () => void;
  const holding = new Promise<void>((resolve) => started = resolve);
  const held = holder.begin(async (tx) => {
    await startFlow(tx, flow, { text: "held" }, { debounce: { key: "tx", windowSeconds: 1 } });
    started();
    await mayCommit;
  });
  await holding;
  const [{ skipped }] = await db.sql<{ skipped: number }[]>`
    select sluice.start_due_debounced() as skipped`;
  assert.equal(skipped, 0);
  release();
  await held;
  assert.equal(await sweepNow(db), 1);
  const [run] = await db.sql<{ run_id: string; input: unknown }[]>`
    select run_id::text, input from sluice.runs`;
  assert.deepEqual({ ...run }, { run_id: runId, input: { text: "held" } });
});

Deno.test("bad debounce options are refused before anything is written", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const bad: [unknown, string][] = [
    [{ key: "k", windowSeconds: 0 }, "debounce.windowSeconds"],
    [{ key: "k", windowSeconds: -5 }, "debounce.windowSeconds"],
    [{ key: "k", windowSeconds: 1.5 }, "debounce.windowSeconds"],
    [{ key: "k", windowSeconds: 604801 }, "debounce.windowSeconds"],
    [{ key: "k", windowSeconds: "5" }, "debounce.windowSeconds"],
    [{ key: "k", windowSeconds: 10, maxWaitSeconds: 5 }, "debounce.maxWaitSeconds"],
    [{ key: "", windowSeconds: 10 }, "debounce.key"],
    [{ windowSeconds: 10 }, "debounce.key"],
    [null, "debounce"],
  ];
  for (const [debounce, option] of bad) {
    await assert.rejects(
      // deno-lint-ignore no-explicit-any
      startFlow(db.sql, flow, { text: "a" }, { debounce: debounce as any }),
      (error: unknown) =>
        error instanceof StartOptionError && error.option === option &&
        error.message.startsWith('Cannot start flow "autosave": ' + option + " must be"),
      JSON.stringify(debounce),
    );
  }
  await assert.rejects(
    startFlow(db.sql, flow, { text: "a" }, {
      debounce: { key: "k", windowSeconds: 5 },
      idempotencyKey: "k",
    }),
    StartOptionError,
  );
  await assert.rejects(
    startFlow(db.sql, flow, { text: "a" }, {
      debounce: { key: "k", windowSeconds: 5 },
      runId: crypto.randomUUID(),
    }),
    (error: unknown) => error instanceof StartOptionError && error.option === "runId",
  );
  // The SQL functions refuse the same values themselves, naming them.
  const sqlBad: [string, RegExp][] = [
    [
      '{"debounce": {"key": "k", "window_seconds": 0}}',
      /window_seconds must be a whole number of seconds from 1 to 604800, got 0/,
    ],
    ['{"debounce": {"key": "k", "window_seconds": 2.5}}', /window_seconds .* got 2\.5/],
    [
      '{"debounce": {"key": "k", "window_seconds": 10, "max_wait_seconds": 9}}',
      /max_wait_seconds must be .* from window_seconds \(10\) to 604800, got 9/,
    ],
    [
      '{"debounce": {"key": "k", "window_seconds": 10, "every": 1}}',
      /unknown debounce option "every"/,
    ],
    ['{"debounce": {"window_seconds": 10}}', /debounce\.key must be a string/],
    [
      '{"debounce": {"key": "k", "window_seconds": 10}, "idempotency_key": "k"}',
      /cannot be combined/,
    ],
  ];
  for (const [options, message] of sqlBad) {
    await assert.rejects(
      db.sql`select sluice.start_flow('autosave', '{"text": "a"}', null, ${options}::text::jsonb)`,
      (error: { code?: string; message?: string }) =>
        error.code === "22023" && message.test(error.message ?? ""),
      options,
    );
  }
  await assert.rejects(
    db.sql`select sluice.start_flow('autosave', '{"text": "a"}', gen_random_uuid(),
      '{"debounce": {"key": "k", "window_seconds": 10}}')`,
    /a debounced start takes no run id/,
  );
  // An input the flow refuses is refused at the start, not when the window closes.
  await assert.rejects(
    db.sql`select sluice.start_flow('autosave', null, null,
      '{"debounce": {"key": "k", "window_seconds": 10}}')`,
    /input is null/,
  );
  assert.deepEqual(await pending(db), []);
  assert.equal(await runCount(db), 0);
});

Deno.test("a worker's heartbeat starts the debounced run when its window closes; waitForRun waits for it", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  await using _worker = await testWorker(flow, db);
  const debounce = { key: "live", windowSeconds: 1 };
  const runId = await startFlow(db.sql, flow, { text: "draft" }, { debounce });
  assert.equal(await startFlow(db.sql, flow, { text: "final" }, { debounce }), runId);
  for (const listen of [true, false]) {
    assert.deepEqual(await waitForRun(db.sql, runId, { timeoutMs: 30_000, listen, flow }), {
      save: { saved: "final" },
    });
  }
  // An id that is neither a run nor a pending start is still refused.
  await assert.rejects(
    waitForRun(db.sql, crypto.randomUUID(), { timeoutMs: 1000 }),
    /no such run/,
  );
});

Deno.test("a debounced start whose flow is gone when due keeps its error; the next start replaces it", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  await db.sql`insert into sluice.aliases (alias, flow_slug) values ('notes', 'autosave')`;
  const debounce = { key: "gone", windowSeconds: 60 };
  const runId = await startFlow(db.sql, "notes", { text: "a" }, { debounce });
  await db.sql`delete from sluice.aliases where alias = 'notes'`;
  assert.equal(await sweepNow(db), 0);
  const [row] = await db.sql<{ error_message: string }[]>`
    select error_message from sluice.debounced_starts`;
  assert.match(row.error_message, /no flow or alias has that name/);
  await assert.rejects(
    waitForRun(db.sql, runId, { timeoutMs: 5000 }),
    /its debounced start could not create it: .*no flow or alias/,
  );
  await db.sql`insert into sluice.aliases (alias, flow_slug) values ('notes', 'autosave')`;
  const next = await startFlow(db.sql, "notes", { text: "b" }, { debounce });
  assert.notEqual(next, runId);
  assert.equal(await sweepNow(db), 1);
  const [run] = await db.sql<{ run_id: string; started_via: string }[]>`
    select run_id::text, started_via from sluice.runs`;
  assert.deepEqual({ ...run }, { run_id: next, started_via: "notes" });
});

Deno.test("docs/flow_control.md's debounced start from SQL returns the pending run's id", async () => {
  await using db = await freshDatabase();
  await compileFlow(
    db.sql,
    new Flow<{ docId: string; text: string }>({ slug: "index_document" })
      .step({ slug: "index" }, () => 1),
  );
  const doc = await Deno.readTextFile(new URL("../../docs/flow_control.md", import.meta.url));
  const statement = doc.match(/`(select sluice\.start_flow\('index_document'[^`]*)`/)?.[1];
  assert.ok(statement, "docs/flow_control.md has no debounced start_flow call");
  const [{ start_flow: first }] = await db.sql.unsafe(statement);
  const [{ start_flow: again }] = await db.sql.unsafe(statement);
  assert.equal(again, first);
  const [row] = await db.sql`
    select run_id::text, debounce_key, starts,
      max_due_at - first_at = interval '60 seconds' as capped
    from sluice.debounced_starts`;
  assert.deepEqual({ ...row }, { run_id: first, debounce_key: "doc:d1", starts: 2, capped: true });
});

Deno.test("sweeps racing on 4 connections create each due debounced run exactly once", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, flow);
  const runIds = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      startFlow(db.sql, flow, { text: `doc ${i}` }, {
        debounce: { key: `doc-${i}`, windowSeconds: 600 },
      })),
  );
  await db.sql`update sluice.debounced_starts set due_at = clock_timestamp() - interval '1 second'`;
  const sweepers = Array.from({ length: 4 }, () => db.connect(1));
  // Batches of 5: each sweeper takes the rows the others do not hold, until none is left.
  const started = await Promise.all(sweepers.map(async (sql) => {
    let total = 0;
    for (;;) {
      const [{ n }] = await sql<{ n: number }[]>`select sluice.start_due_debounced(5) as n`;
      total += n;
      const [{ left }] = await sql<{ left: number }[]>`
        select count(*)::int as left from sluice.debounced_starts`;
      if (left === 0) return total;
    }
  }));
  assert.equal(started.reduce((a, b) => a + b, 0), 50);
  const runs = await db.sql<{ run_id: string }[]>`select run_id::text from sluice.runs`;
  assert.deepEqual(runs.map((run) => run.run_id).sort(), [...runIds].sort());
});
