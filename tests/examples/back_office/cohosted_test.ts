// The back office in the co-hosted layout (examples/back_office/.../cohosted_flows.ts): the same
// ten flows, every step on its own queue, the steps co-hosted in six worker functions. Counts the
// functions the generator plans, and runs every flow to completion on six `serveWorkers`
// functions over HTTP.
import assert from "node:assert/strict";
import { waitForRun } from "../../../src/client/wait_for_run.ts";
import { functionsOf, planWorkerFunctions } from "../../../src/codegen/plan.ts";
import { type DeployableFlow, Flow, withStepQueues } from "../../../mod.ts";
import { serveWorkers } from "../../../src/edge/mod.ts";
import { freshDatabase } from "../../_db.ts";
import { setupDatabase } from "../../../examples/back_office/setup.ts";
import { seed, startEveryFlow } from "../../../examples/back_office/dev/harness.ts";
import * as cohosted from "../../../examples/back_office/supabase/functions/_shared/cohosted_flows.ts";
import * as perStep from "../../../examples/back_office/supabase/functions/_shared/flows.ts";
import { GROUPED_QUEUES } from "../../../bench/_back_office_layout.ts";
import { scaled } from "../../_support.ts";

const MODULE = "examples/back_office/supabase/functions/_shared/cohosted_flows.ts";
const FUNCTIONS = [
  "office-bulk",
  "office-interactive",
  "office-media",
  "office-payments",
  "office-render",
  "office-webhooks",
];

Deno.test("back office co-hosted: 6 worker functions instead of 25, and a rollout adds none", () => {
  const specs = planWorkerFunctions(cohosted, MODULE);
  assert.deepEqual(functionsOf(specs).map((group) => group[0].functionName), FUNCTIONS);
  // Every step of every flow, each on its own queue, in the function of its class.
  assert.equal(specs.length, 30);
  for (const spec of specs) {
    const queue = GROUPED_QUEUES[spec.flowSlug][spec.stepSlug!];
    assert.equal(
      spec.functionName,
      queue.replaceAll("_", "-"),
      `${spec.flowSlug}.${spec.stepSlug}`,
    );
    assert.equal(spec.queueName, `${spec.flowSlug}__${spec.stepSlug}`);
  }
  assert.equal(functionsOf(planWorkerFunctions(perStep, MODULE)).length, 25);

  // V2 of invoice_send deployed beside V1 (both export in the flows module while V1 drains):
  // its workers join the same functions.
  const v2 = withStepQueues(
    new Flow<{ invoiceId: number }>({ slug: "invoice_send_v2" })
      .step({ slug: "render_pdf" }, () => "pdf")
      .step({ slug: "email_invoice", dependsOn: ["render_pdf"] }, () => true),
    { functions: { render_pdf: "office-render", email_invoice: "office-interactive" } },
  );
  const rollout = planWorkerFunctions({ ...cohosted, invoiceSendV2: v2 }, MODULE);
  assert.deepEqual(functionsOf(rollout).map((group) => group[0].functionName), FUNCTIONS);
  assert.equal(rollout.length, 32);
});

Deno.test("back office co-hosted: every flow runs to completion on six co-hosting functions over HTTP", async () => {
  await using db = await freshDatabase();
  await setupDatabase(db.sql);
  const secret = "back-office-secret";
  // As the generated entrypoints do: each function gets the flows with a step it hosts.
  const namespace: Record<string, DeployableFlow> = cohosted;
  const servers = functionsOf(planWorkerFunctions(cohosted, MODULE)).map((group) =>
    serveWorkers([...new Set(group.map((spec) => namespace[spec.exportName]))], {
      functionName: group[0].functionName,
      connectionString: db.url,
      poolSize: 4,
      secret,
      env: {},
      hostname: "127.0.0.1",
      port: 0,
      onListen: () => {},
      handleSignals: false,
      logLevel: "warn",
    })
  );
  try {
    for (const server of servers) {
      const response = await fetch(`http://127.0.0.1:${server.addr.port}/`, {
        method: "POST",
        headers: { authorization: `Bearer ${secret}` },
      });
      const body = await response.json();
      assert.equal(response.status, 200, JSON.stringify(body));
      assert.equal(body.status, "running");
    }
    const coverage = await db.sql`
      select count(*)::int as steps, count(*) filter (where missing_worker)::int as missing,
        count(distinct queue_name)::int as queues
      from sluice.route_coverage`;
    assert.deepEqual({ ...coverage[0] }, { steps: 30, missing: 0, queues: 30 });
    const functions = await db.sql`
      select function_name, count(*)::int as workers from sluice.workers
      where stopped_at is null group by function_name order by function_name`;
    assert.deepEqual(functions.map((row) => [row.function_name, row.workers]), [
      ["office-bulk", 9],
      ["office-interactive", 17],
      ["office-media", 1],
      ["office-payments", 1],
      ["office-render", 1],
      ["office-webhooks", 1],
    ]);
    // One LISTEN session per function, not per worker (30 workers).
    const [sessions] = await db.sql`
      select count(*) filter (where query ilike 'listen %')::int as listening,
        count(*)::int as connections
      from pg_stat_activity where application_name like 'sluice-edge:office-%'`;
    assert.equal(sessions.listening, 6);
    console.log(`co-hosted back office, idle after start: ${sessions.connections} connections`);

    const rows = await seed(db.sql);
    const runs = await startEveryFlow(db.sql, rows);
    for (const runId of Object.values(runs)) {
      await waitForRun(db.sql, runId, { timeoutMs: scaled(60_000) });
    }
    const [mails] = await db.sql`select count(*)::int as n from public.emails`;
    assert.equal(mails.n, 9, "each expected mail sent once");
    const [invoice] = await db.sql`
      select status from public.invoices where id = ${rows.invoiceId}`;
    assert.equal(invoice.status, "sent");
  } finally {
    for (const server of servers) await server.shutdown();
  }
});
