// The worked example of docs/privileges.md#per-flow-access, run as written: two teams granted
// their own flows; team shipping neither sees nor cancels a run of team billing's flow.
import assert from "node:assert/strict";
import postgres from "postgres";
import { grantAccess, GrantAccessError } from "../../src/admin/mod.ts";
import { cancelRun } from "../../src/client/cancel_run.ts";
import { compileFlow } from "../../src/client/compile_flow.ts";
import { FlowAccessError } from "../../src/client/errors.ts";
import { startFlow } from "../../src/client/start_flow.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { freshDatabase } from "../_db.ts";
import { codeBlocks } from "./_guides.ts";

const DOC = new URL("../../docs/privileges.md", import.meta.url);

/** The example's blocks: the grants, team shipping's statements, the error it gets. */
function exampleBlocks(): { grants: string[]; attempt: string[]; error: string } {
  const doc = Deno.readTextFileSync(DOC);
  const section = doc.slice(
    doc.indexOf("## Per-flow access"),
    doc.indexOf("## What runs as definer"),
  );
  const blocks = codeBlocks(section);
  const statements = (body: string) =>
    body.split(";\n").map((s) => s.trim()).filter((s) => s !== "");
  const sql = blocks.filter((b) => b.lang === "sql");
  const text = blocks.find((b) => b.lang === "text");
  assert.equal(sql.length, 2, "two sql blocks in the example");
  assert.ok(text !== undefined, "the error the example shows");
  return {
    grants: statements(sql[0].body),
    attempt: statements(sql[1].body),
    error: text.body.trim().replace(/^ERROR: {2}/, ""),
  };
}

Deno.test("docs/privileges.md's per-flow example: team shipping neither sees nor cancels team billing's run", async () => {
  const { grants, attempt, error } = exampleBlocks();
  await using db = await freshDatabase();
  const shipping = postgres(db.url, { max: 1, prepare: false, onnotice: () => {} });
  const billing = postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: () => {},
    connection: { options: "-c role=team_billing" },
  });
  try {
    for (const statement of grants) await db.sql.unsafe(statement);
    // The admin API takes the same list; an entry that is no slug or prefix is refused first.
    await grantAccess(db.sql, "team_billing", { flows: ["billing_*"] });
    await assert.rejects(
      grantAccess(db.sql, "team_billing", { flows: ["billing*x"] }),
      (e: unknown) => e instanceof GrantAccessError && e.entry === "billing*x",
    );
    const flow = new Flow<{ amount: number }>({ slug: "billing_invoices" })
      .step({ slug: "charge" }, (input) => input.amount);
    await compileFlow(billing, flow);
    const runId = await startFlow(billing, flow, { amount: 12 });

    const [setRole, count, cancel] = attempt.map((s) => s.replaceAll("<run id>", runId));
    await shipping.unsafe(setRole);
    const [{ count: seen }] = await shipping.unsafe(count);
    assert.equal(Number(seen), 0);
    await assert.rejects(shipping.unsafe(cancel), (e: postgres.PostgresError) => {
      assert.equal(e.code, "SLA01");
      assert.equal(e.message, error.replaceAll("<run id>", runId));
      return true;
    });
    // The client functions throw it typed, with the role and the flow.
    const refused = (e: unknown) =>
      e instanceof FlowAccessError && e.role === "team_shipping" && e.flow === "billing_invoices";
    await assert.rejects(cancelRun(shipping, runId, { reason: "not ours" }), refused);
    await assert.rejects(startFlow(shipping, "billing_invoices", { amount: 1 }), refused);
    const [{ visible }] = await billing`select count(*)::int as visible from sluice.runs`;
    assert.equal(visible, 1);
  } finally {
    await shipping.end();
    await billing.end();
    for (const role of ["team_billing", "team_shipping"]) {
      await db.sql.unsafe(`drop owned by ${role} cascade`).catch(() => {});
      await db.sql.unsafe(`drop role if exists ${role}`);
    }
  }
});
