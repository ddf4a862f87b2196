// `sluice start <flow>` on a real database (docs/ops.md): the input is JSON text, parsed (an
// object starts with that object, not with a string), by alias or slug; a bad input exits 2 and
// starts nothing; an unknown flow exits 1 naming the closest; an idempotency key returns the run.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { freshDatabase } from "../_db.ts";
import { opsDone } from "./_ops.ts";

const orders = new Flow<{ orderId: number }>({ slug: "orders" })
  .step({ slug: "load" }, (input) => input.orderId);

Deno.test("sluice start parses --input as JSON, exits 2 for bad JSON and 1 for an unknown flow", async () => {
  await using db = await freshDatabase();
  await compileFlow(db.sql, orders);
  const runs = async () =>
    await db.sql<{ run_id: string; input: unknown; started_via: string }[]>`
      select run_id::text, input, started_via from sluice.runs order by started_at`.then((
      rows,
    ) => [...rows]);

  const notJson = await opsDone(db, "start", "orders", "--input", "{orderId: 7}");
  assert.equal(notJson.code, 2);
  assert.match(notJson.err, /^Cannot start flow "orders": --input is not JSON/);
  const typo = await opsDone(db, "start", "ordrs", "--input", "{}");
  assert.equal(typo.code, 1);
  assert.equal(
    typo.err,
    'Cannot start flow "ordrs": no flow or alias "ordrs"; did you mean "orders"?',
  );
  assert.deepEqual(await runs(), []);

  const started = await opsDone(db, "start", "orders", "--input", '{"orderId": 7}');
  assert.equal(started.code, 0, started.err);
  const [run] = await runs();
  assert.equal(started.out, run.run_id);
  assert.deepEqual([run.input, run.started_via], [{ orderId: 7 }, "orders"]);

  const key = ["--idempotency-key", "order-8"];
  const first = await opsDone(db, "start", "orders", "--input", '{"orderId": 8}', ...key);
  const again = await opsDone(db, "start", "orders", "--input", '{"orderId": 8}', ...key, "--json");
  assert.deepEqual(JSON.parse(again.out), [{ runId: first.out, flow: "orders" }]);
  const conflict = await opsDone(db, "start", "orders", "--input", '{"orderId": 9}', ...key);
  assert.equal(conflict.code, 1);
  assert.match(conflict.err, /order-8/);
  assert.equal((await runs()).length, 2);
});
