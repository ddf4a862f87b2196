// startFlow() of a flow no worker has compiled yet: a FlowNotFoundError whose message carries the
// whole explanation (an uncaught error prints its message, never the database's hint).
import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, FlowNotFoundError, startFlow } from "../../mod.ts";
import { freshDatabase } from "../_db.ts";

const refundOrder = new Flow<{ orderId: number }>({ slug: "refund_order" })
  .step({ slug: "refund" }, () => 1);

Deno.test("startFlow() of a flow no worker has compiled throws FlowNotFoundError saying what to do", async () => {
  await using db = await freshDatabase();
  const cases = [
    { flow: refundOrder as never, ref: "refund_order", viaAlias: false, detail: "no such flow" },
    { flow: "refund_order", ref: "refund_order", viaAlias: true, detail: "no flow or alias" },
    {
      flow: defineDeployedFlow(refundOrder, { alias: "refunds" }) as never,
      ref: "refunds",
      viaAlias: true,
      detail: "no flow or alias",
    },
  ];
  for (const { flow, ref, viaAlias, detail } of cases) {
    await assert.rejects(startFlow(db.sql, flow, { orderId: 7 }), (error: unknown) => {
      assert.ok(error instanceof FlowNotFoundError, String(error));
      assert.equal(error.name, "FlowNotFoundError");
      assert.equal(error.flowRef, ref);
      assert.equal(error.viaAlias, viaAlias);
      assert.ok(error.message.startsWith(`Cannot start flow "${ref}": ${detail}`), error.message);
      assert.match(error.message, /a flow exists once a worker for it has started and compiled it/);
      assert.equal((error.cause as { code?: string }).code, "P0002");
      return true;
    });
  }
  const [{ runs }] = await db.sql`select count(*)::int as runs from sluice.runs`;
  assert.equal(runs, 0);
});
