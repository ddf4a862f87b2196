import assert from "node:assert/strict";
import { freshDatabase } from "../_db.ts";
import {
  bigintArray,
  compileFlow,
  completeTask,
  json,
  read,
  readAndClaim,
  registerWorker,
  type Sql,
  startFlow,
  supportedPairs,
} from "./_fixtures.ts";

// Wide enough that probing the batch's tasks by key beats scanning the table, as it does in production.
const WIDTH = 10_000;
const BATCH = 20;

/** Rows of sluice.step_tasks that the current transaction has read so far, by any scan. */
async function taskRowsRead(tx: Sql): Promise<number> {
  const [row] = await tx<{ n: number }[]>`
    select (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int as n
    from pg_stat_xact_user_tables where relid = 'sluice.step_tasks'::regclass
  `;
  return row.n;
}

Deno.test("a claim and a completion of a wide map's tasks read their own tasks, not the map's", async () => {
  await using db = await freshDatabase();
  // Statistics as a busy database has them: many steps with a task or two, spread over many
  // queues, taken before the wide map started.
  await compileFlow(db.sql, {
    slug: "narrow",
    queueMode: "step",
    steps: Array.from({ length: 30 }, (_, i) => ({ slug: `s${i}` })),
  });
  for (let i = 0; i < 10; i++) await startFlow(db.sql, "narrow", { i });
  await compileFlow(db.sql, {
    slug: "wide",
    steps: [
      { slug: "list" },
      { slug: "each", type: "map", deps: ["list"], mapSource: "list" },
    ],
  });
  const runId = await startFlow(db.sql, "wide", {});
  const workerId = await registerWorker(db.sql, "wide", "wide");
  const [list] = await readAndClaim(db.sql, "wide", workerId, "wide");
  await db.sql`analyze sluice.step_tasks`;
  assert.equal(
    await completeTask(db.sql, list, Array.from({ length: WIDTH }, (_, i) => i)),
    "completed",
  );

  const supported = await supportedPairs(db.sql, "wide");
  // One connection, one transaction: the statistics view counts what this transaction read.
  const tx = db.connect(1);
  await tx`begin`;
  const messages = await read(tx, "wide", BATCH);
  assert.equal(messages.length, BATCH);
  const before = await taskRowsRead(tx);
  const [{ claim }] = await tx`
    select sluice.start_tasks('wide', ${bigintArray(messages.map((m) => m.msg_id))}::bigint[],
      ${workerId}, ${json(tx, supported)}::jsonb) as claim
  `;
  const claimed = await taskRowsRead(tx);
  const results = claim.tasks.map((t: Record<string, unknown>) => ({ ...t, output: t.input }));
  const [{ outcome }] = await tx`
    select sluice.complete_tasks(${json(tx, results)}::jsonb) as outcome
  `;
  const claimRead = claimed - before;
  const completeRead = await taskRowsRead(tx) - claimed;
  await tx`commit`;

  assert.equal(outcome.completed, BATCH);
  const [{ done }] = await db.sql`
    select count(*)::int as done from sluice.step_tasks
    where run_id = ${runId} and step_slug = 'each' and status = 'completed'
  `;
  assert.equal(done, BATCH);
  // A few index probes per task of the batch; reading the map's tasks would be far above.
  assert.ok(
    claimRead <= 4 * BATCH,
    `start_tasks read ${claimRead} task rows for ${BATCH} messages`,
  );
  assert.ok(
    completeRead <= 4 * BATCH,
    `complete_tasks read ${completeRead} task rows for ${BATCH} results`,
  );
});
