import assert from "node:assert/strict";
import { waitForRun } from "../../../src/client/wait_for_run.ts";
import { freshDatabase } from "../../_db.ts";
import { setupDatabase } from "../../../examples/back_office/setup.ts";
import {
  seed,
  startEveryFlow,
  startFunctionWorker,
  workerFunctions,
} from "../../../examples/back_office/dev/harness.ts";
import { scaled } from "../../_support.ts";

Deno.test("back office: every flow runs to completion on its generated worker functions", async () => {
  await using db = await freshDatabase();
  await setupDatabase(db.sql);
  const functions = await workerFunctions();
  assert.equal(functions.length, 25, "one function per plain flow and per step-queued step");
  const workers = [];
  try {
    for (const fn of functions) {
      workers.push(
        await startFunctionWorker(fn, {
          connectionString: db.url,
          poolSize: 2,
          logLevel: "warn",
          env: {},
        }),
      );
    }
    const rows = await seed(db.sql);
    const runs = await startEveryFlow(db.sql, rows);
    const outputs: Record<string, unknown> = {};
    for (const [name, runId] of Object.entries(runs)) {
      outputs[name] = await waitForRun(db.sql, runId, { timeoutMs: scaled(60_000) });
    }
    const [ada, grace] = rows.accountIds;

    // Every mail went out once, to the right account.
    const emails = await db.sql<{ account_id: number; kind: string; dedupe_key: string }[]>`
      select account_id, kind, dedupe_key from public.emails order by kind, account_id`;
    assert.deepEqual(
      emails.map((e) => `${e.kind}:${e.account_id}`).sort(),
      [
        `export_ready:${grace}`,
        `invoice:${grace}`,
        `order_confirmation:${ada}`,
        `password_reset:${grace}`,
        `refund_decision:${ada}`,
        `refund_decision:${ada}`,
        `trial_reminder:${ada}`,
        `weekly_digest:${grace}`,
        `welcome:${ada}`,
      ].sort(),
    );

    const [account] = await db.sql`
      select onboarding_step, trial_ends_at is not null as has_trial from public.accounts
      where id = ${ada}`;
    assert.deepEqual({ ...account }, { onboarding_step: "connect_data", has_trial: true });

    const [invoice] = await db.sql`
      select i.status, i.pdf_path, o.content_type from public.invoices i
      join public.stored_objects o on o.path = i.pdf_path where i.id = ${rows.invoiceId}`;
    assert.deepEqual({ ...invoice }, {
      status: "sent",
      pdf_path: `invoices/${rows.invoiceId}.pdf`,
      content_type: "application/pdf",
    });

    // The down endpoint exhausted its attempts and is recorded failed; the run still completed.
    const deliveries = await db.sql<{ status: string; attempts: number }[]>`
      select status, attempts from public.webhook_deliveries where event_id = ${rows.eventId}
      order by endpoint_id`;
    assert.deepEqual(deliveries.map((d) => ({ ...d })), [
      { status: "delivered", attempts: 1 },
      { status: "delivered", attempts: 1 },
      { status: "failed", attempts: 4 },
    ]);
    assert.deepEqual(outputs.webhook_fanout, { summarize: { delivered: 2, failed: 1 } });

    const [exported] = await db.sql`
      select status, row_count from public.exports where day = ${rows.day}::date`;
    assert.deepEqual({ ...exported }, { status: "uploaded", row_count: 3 });

    const thumbnails = await db.sql<{ width: number; height: number }[]>`
      select width, height from public.thumbnails where image_id = ${rows.imageId} order by width`;
    assert.deepEqual(thumbnails.map((t) => ({ ...t })), [
      { width: 64, height: 32 },
      { width: 256, height: 128 },
      { width: 1024, height: 512 },
    ]);

    const [reset] = await db.sql`
      select count(*)::int as n from public.password_resets where account_id = ${grace}`;
    assert.equal(reset.n, 1);
    assert.deepEqual(outputs.trial_expiry_not_due, {}, "a pro account gets no trial reminder");

    const refunds = await db.sql<{ id: number; status: string; paid: boolean }[]>`
      select id, status, payment_ref is not null as paid from public.refunds order by id`;
    assert.deepEqual(refunds.map((r) => ({ ...r })), [
      { id: rows.refundIds.small, status: "paid", paid: true },
      { id: rows.refundIds.large, status: "rejected", paid: false },
    ]);

    const [order] = await db.sql`select status from public.orders where id = ${rows.orderId}`;
    assert.equal(order.status, "confirmed");
    const [digest] = await db.sql`
      select item_count from public.digests where account_id = ${grace} and week = ${rows.week}::date`;
    // Two of the seed's activity rows are Grace's; the order confirmation's is Ada's.
    assert.equal(digest.item_count, 2);
  } finally {
    await Promise.all(workers.map((worker) => worker.stop()));
  }
});
