// A mistyped flow slug on the command line: `runs --flow` and `schedules create --flow/--alias`
// exit 1 naming the slug and the flow it was probably meant to be (or the flows there are),
// instead of "No runs match." with exit 0 or a bare "no such flow"; nothing is written.
import assert from "node:assert/strict";
import { Flow } from "../../mod.ts";
import { compileFlow } from "../../src/admin/mod.ts";
import { freshDatabase } from "../_db.ts";
import { opsDone } from "./_ops.ts";

const orders = new Flow<{ id: number }>({ slug: "orders" }).step({ slug: "load" }, () => 1);
const refunds = new Flow<{ id: number }>({ slug: "refunds" }).step({ slug: "load" }, () => 1);

Deno.test("runs --flow and schedules create name a mistyped flow and the closest one", async () => {
  await using db = await freshDatabase();
  assert.deepEqual(await opsDone(db, "runs", "--flow", "orders"), {
    code: 1,
    out: "",
    err: 'Cannot list runs: no flow "orders"; no flow is compiled yet (a flow exists once a ' +
      "worker for it has started)",
  });

  await compileFlow(db.sql, orders);
  await compileFlow(db.sql, refunds);
  assert.deepEqual(await opsDone(db, "runs", "--flow", "ordrs"), {
    code: 1,
    out: "",
    err: 'Cannot list runs: no flow "ordrs"; did you mean "orders"?',
  });
  assert.deepEqual(await opsDone(db, "runs", "--flow", "invoices"), {
    code: 1,
    out: "",
    err: 'Cannot list runs: no flow "invoices"; the flows are "orders", "refunds"',
  });
  assert.deepEqual(await opsDone(db, "runs", "--flow", "orders"), {
    code: 0,
    out: "No runs match.",
    err: "",
  });

  const schedule = (...target: string[]) =>
    opsDone(db, "schedules", "create", "nightly", ...target, "--cron", "0 3 * * *");
  assert.deepEqual(await schedule("--flow", "refund"), {
    code: 1,
    out: "",
    err: 'Cannot create schedule "nightly": no flow "refund"; did you mean "refunds"?',
  });
  assert.deepEqual(await schedule("--alias", "Orderz"), {
    code: 1,
    out: "",
    err: 'Cannot create schedule "nightly": no flow or alias "Orderz"; did you mean "orders"?',
  });
  const [{ schedules }] = await db.sql`select count(*)::int as schedules from sluice.schedules`;
  assert.equal(schedules, 0, "nothing written");
});
