// The alias and version commands of `deno task ops` against real workers: `aliases activate`
// refuses a flow whose step has no live worker and a lost compare-and-swap (without retrying),
// `aliases list` / `aliases history` show the switch, `version-drain --wait` finishes when a real
// worker drains the old version's run.
import assert from "node:assert/strict";
import { Flow, withStepQueues } from "../../mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { ops, opsDone } from "./_ops.ts";
import { latch, testWorker, waitUntil } from "../worker/_helpers.ts";

/** `aliases activate <args>` to its end. */
function activate(db: TestDatabase, ...args: string[]) {
  return opsDone(db, "aliases", "activate", ...args);
}

/** The alias rows and history rows: what a refused activation must leave as it was. */
async function aliasState(db: TestDatabase) {
  const aliases = await db.sql`select * from sluice.aliases order by alias`;
  const history = await db.sql`select * from sluice.alias_history order by alias, generation`;
  return { aliases: [...aliases], history: [...history] };
}

const ordersV1 = new Flow<{ id: number }>({ slug: "orders" })
  .step({ slug: "total" }, (input) => input.id * 2);

/** V2 is step-queued: each step has its own queue and its own worker. */
const ordersV2 = withStepQueues(
  new Flow<{ id: number; note: string }>({ slug: "orders_v2" })
    .step({ slug: "total" }, (input) => input.id * 3)
    .step({ slug: "notify", dependsOn: ["total"] }, (deps) => ({ sent: deps.total })),
);

Deno.test("aliases activate checks live workers per step, wins the CAS once, never retries; list and history show it", async () => {
  await using db = await freshDatabase();
  await using _v1 = await testWorker(ordersV1, db);
  await using _total = await testWorker(ordersV2, db, { stepSlug: "total" });

  const usage = await activate(db, "orders", "orders_v2");
  assert.equal(usage.code, 2);
  assert.match(usage.err, /--expect-generation N is required/);
  assert.match(usage.err, /read it with `aliases list` \(GENERATION\), or give 0 to create/);
  const bad = await activate(db, "orders", "orders_v2", "--expect-generation", "one");
  assert.equal(bad.code, 2);
  assert.match(bad.err, /\(got "one"\)/);

  const before = await aliasState(db);
  const missing = await activate(db, "orders", "orders_v2", "--expect-generation", "1");
  assert.equal(missing.code, 1);
  assert.equal(missing.out, "");
  assert.match(
    missing.err,
    /^Cannot activate alias "orders" on flow "orders_v2": no live worker serves step notify \(queue orders_v2__notify\); start its workers first, or pass force\. Nothing changed\.$/,
  );
  assert.deepEqual(await aliasState(db), before, "a refused activation writes nothing");

  await using _notify = await testWorker(ordersV2, db, { stepSlug: "notify" });
  const activated = await activate(
    db,
    "orders",
    "orders_v2",
    "--expect-generation=1",
    "--by",
    "deploy #42",
  );
  assert.equal(activated.code, 0, activated.err);
  assert.equal(
    activated.out,
    'Activated alias "orders" on flow "orders_v2": generation 2 (was flow "orders"). Runs ' +
      "started through it from now on start on orders_v2.",
  );

  const again = await activate(db, "orders", "orders_v2", "--expect-generation", "2");
  assert.equal(again.code, 0, again.err);
  assert.match(again.out, /already points at flow "orders_v2" at generation 2; nothing changed/);

  // A stale generation (the operator read the alias before the switch) loses, and says to what.
  const stateBeforeLoss = await aliasState(db);
  const lost = await activate(db, "orders", "orders", "--expect-generation", "1");
  assert.equal(lost.code, 1);
  assert.match(
    lost.err,
    /^Cannot activate alias "orders": expected generation 1 but it is at generation 2 \(flow "orders_v2"\)\. Another activation won; nothing changed\. Read the alias again/,
  );
  assert.deepEqual(await aliasState(db), stateBeforeLoss);

  // A new alias on a flow with a step nobody serves: only --force, and the history says so.
  await _notify.stop();
  const forced = await activate(
    db,
    "orders_api",
    "orders_v2",
    "--expect-generation",
    "0",
    "--force",
  );
  assert.equal(forced.code, 0, forced.err);
  assert.match(forced.out, /generation 1 \(new alias\)/);

  const list = await opsDone(db, "aliases", "list");
  assert.equal(list.code, 0, list.err);
  const lines = list.out.split("\n");
  assert.equal(lines[0], "ALIAS       FLOW       GENERATION  ACTIVATED AT          KIND");
  const cells = lines.slice(1).map((line) => line.trim().split(/\s{2,}/));
  const time = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
  assert.ok(cells.every((row) => time.test(row[3])), list.out);
  assert.deepEqual(
    cells.map(([alias, flow, generation, , kind]) => [alias, flow, generation, kind]),
    [
      ["orders", "orders_v2", "2", "re-pointed"],
      ["orders_api", "orders_v2", "1", "alias"],
      ["orders_v2", "orders_v2", "1", "self"],
    ],
  );
  assert.equal(lines.length, 4);
  const json = JSON.parse((await opsDone(db, "aliases", "list", "--json")).out);
  assert.deepEqual(
    json.map((
      row: Record<string, unknown>,
    ) => [row.alias, row.flow_slug, row.generation, row.kind]),
    [
      ["orders", "orders_v2", 2, "re-pointed"],
      ["orders_api", "orders_v2", 1, "alias"],
      ["orders_v2", "orders_v2", 1, "self"],
    ],
  );

  const [{ user }] = await db.sql`select current_user as user`;
  const history = await opsDone(db, "aliases", "history", "orders");
  assert.equal(history.code, 0, history.err);
  const rows = history.out.split("\n").map((line) => line.trim().split(/\s{2,}/));
  assert.deepEqual(rows[0], ["GENERATION", "FROM", "TO", "ACTIVATED AT", "BY", "FORCED"]);
  assert.deepEqual(
    rows.slice(1).map(([generation, from, to, , by, forced]) => [
      generation,
      from,
      to,
      by,
      forced,
    ]),
    [["1", "-", "orders", user, "-"], ["2", "orders", "orders_v2", "deploy #42", "-"]],
  );
  const apiHistory = JSON.parse(
    (await opsDone(db, "aliases", "history", "orders_api", "--json")).out,
  );
  assert.equal(apiHistory.length, 1);
  assert.equal(apiHistory[0].forced, true);
  assert.equal(apiHistory[0].previousFlowSlug, null);

  const noFlow = await activate(db, "orders", "no_such_flow", "--expect-generation", "2");
  assert.equal(noFlow.code, 1);
  assert.match(noFlow.err, /Cannot activate alias "orders": no flow "no_such_flow"/);

  const unknown = await opsDone(db, "aliases", "history", "no_such_alias");
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /no such alias \(see aliases list\)/);
});

Deno.test("aliases activate: N operators racing with one generation, exactly one wins, the rest are told who won", async () => {
  await using db = await freshDatabase();
  const flows = Array.from(
    { length: 8 },
    (_, i) => new Flow<{ id: number }>({ slug: `target_${i}` }).step({ slug: "s" }, () => i),
  );
  await using _base = await testWorker(ordersV1, db);
  const workers = [];
  for (const flow of flows) workers.push(await testWorker(flow, db));
  try {
    const results = await Promise.all(
      flows.map((_, i) =>
        opsDone(db, "aliases", "activate", "orders", `target_${i}`, "--expect-generation", "1")
      ),
    );
    const winners = results.flatMap((result, i) => result.code === 0 ? [i] : []);
    assert.equal(winners.length, 1, JSON.stringify(results));
    const winner = `target_${winners[0]}`;
    for (const result of results.filter((result) => result.code !== 0)) {
      assert.equal(result.code, 1);
      assert.match(
        result.err,
        new RegExp(`expected generation 1 but it is at generation 2 \\(flow "${winner}"\\)`),
      );
    }
    const history = await db.sql`
      select generation::integer, flow_slug from sluice.alias_history where alias = 'orders' order by 1
    `;
    assert.deepEqual(history.map((row) => [row.generation, row.flow_slug]), [
      [1, "orders"],
      [2, winner],
    ]);
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
});

Deno.test("version-drain reports what the old version holds and --wait ends when a real worker drains its run", async () => {
  await using db = await freshDatabase();
  const entered = latch();
  const release = latch();
  const slowV1 = new Flow<{ id: number }>({ slug: "orders" })
    .step({ slug: "total" }, async (input) => {
      entered.resolve();
      await release.promise;
      return input.id;
    });
  const v1 = await testWorker(slowV1, db);
  await using _total = await testWorker(ordersV2, db, { stepSlug: "total" });
  await using _notify = await testWorker(ordersV2, db, { stepSlug: "notify" });
  const [{ run_id: runId }] = await db
    .sql`select sluice.start_flow('orders', '{"id": 1}') as run_id`;
  await entered.promise;
  assert.equal(
    (await activate(db, "orders", "orders_v2", "--expect-generation", "1"))
      .code,
    0,
  );
  await db.sql`select sluice.activate_alias('orders_api', 'orders', 0)`;

  const unknown = await opsDone(db, "version-drain", "no_such_flow");
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /Cannot read the drain of flow "no_such_flow": no flow has that slug/);

  const busy = await opsDone(db, "version-drain", "orders");
  assert.equal(busy.code, 0, "the state is reported, not a failure");
  assert.deepEqual(busy.out.split("\n").slice(0, 7), [
    'Flow "orders":',
    "  active runs    1",
    "  queued tasks   0",
    "  started tasks  1",
    `  live workers   1 (worker functions ${v1.functionName})`,
    "  aliases        orders_api",
    '  its own name   points at "orders_v2"',
  ]);
  assert.match(busy.out, /Alias "orders_api" still points at "orders": new runs arrive through it/);
  assert.match(busy.out, /Not drained: its workers must keep running until its 1 active runs/);

  const short = await opsDone(db, "version-drain", "orders", "--wait", "--timeout", "300ms");
  assert.equal(short.code, 1);
  assert.match(
    short.out,
    /^\[0s\] version orders: 1 active runs, 0 queued tasks, 1 started tasks, 1 live workers$/m,
  );
  assert.match(short.err, /Cannot finish the version drain of "orders" within 300ms/);

  const waiting = ops(db, ["version-drain", "orders", "--wait", "--interval", "50ms"]);
  let settled = false;
  void waiting.code.then(() => settled = true);
  await waitUntil(() => waiting.output.text !== "" || null, "the wait to print its progress");
  assert.equal(settled, false, "the wait must not end while the run is active");
  release.resolve();
  assert.equal(await waiting.code, 0, waiting.output.errors);
  const report = waiting.output.text;
  assert.match(report, /^ {2}active runs {4}0$/m);
  assert.match(
    report,
    new RegExp(
      `^Work drained: no active run and no queued or started task\\. Next: stop its workers ` +
        `\\(functions disable ${v1.functionName}, then functions deprecate ${v1.functionName}\\)`,
      "m",
    ),
  );
  const [run] = await db.sql`select status, flow_slug from sluice.runs where run_id = ${runId}`;
  assert.deepEqual({ ...run }, { status: "completed", flow_slug: "orders" });

  await v1.stop();
  await db.sql`select sluice.activate_alias('orders_api', 'orders_v2', 1)`;
  const done = await opsDone(db, "version-drain", "orders", "--json");
  assert.equal(done.code, 0);
  assert.deepEqual(JSON.parse(done.out), {
    flowSlug: "orders",
    aliases: [],
    selfAliasPointsAt: "orders_v2",
    activeRuns: 0,
    queuedTasks: 0,
    startedTasks: 0,
    liveWorkers: 0,
    workDrained: true,
    drained: true,
  });
  const drained = await opsDone(db, "version-drain", "orders");
  assert.match(drained.out, /^Drained: no active run, .* Delete it with flows reset orders/m);
  assert.equal((await opsDone(db, "flows", "reset", "orders")).code, 0);
});

Deno.test("version-drain warns when the flow's own name still starts it", async () => {
  await using db = await freshDatabase();
  await using _v1 = await testWorker(ordersV1, db);
  const result = await opsDone(db, "version-drain", "orders");
  assert.equal(result.code, 0);
  assert.match(result.out, /its own name {3}still starts "orders"/);
  assert.match(
    result.out,
    /Runs started by the name "orders" still start this flow: re-point it first \(aliases activate orders <new_flow> --expect-generation N\)/,
  );
  assert.match(result.out, /^Work drained: .* Next: stop its workers/m);
});
