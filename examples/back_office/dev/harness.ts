/**
 * Runs the back office for the tests and the benchmark: its worker functions as in-process
 * workers (one per generated function, as deployed), domain rows to work on, and one run of every
 * flow over them.
 *
 * @module
 */

import type { Sql } from "postgres";
import type { DeployableFlow } from "@sluice/sluice";
import { startFlow } from "@sluice/sluice";
import { startWorker, type WorkerHandle, type WorkerOptions } from "@sluice/sluice/worker";
import * as flows from "../supabase/functions/_shared/flows.ts";
import { weekOf } from "../supabase/functions/_shared/office.ts";

/** One generated worker function: the flow it serves and, for a step-queued flow, its step. */
export interface WorkerFunction {
  readonly functionName: string;
  readonly flowSlug: string;
  readonly stepSlug: string | null;
  readonly queueName: string;
  readonly flow: DeployableFlow;
}

/** The flows module's exports by concrete flow slug. */
const BY_SLUG = new Map<string, DeployableFlow>(
  Object.values(flows).flatMap((value) => {
    if (typeof value !== "object" || value === null || !("slug" in value || "flow" in value)) {
      return [];
    }
    const flow = value as DeployableFlow;
    const slug = "flow" in flow ? (flow.flow as { slug: string }).slug : flow.slug;
    return [[slug, flow] as const];
  }),
);

/** The worker functions `functions generate` wrote, read from the committed manifest. */
export async function workerFunctions(): Promise<WorkerFunction[]> {
  const manifest = JSON.parse(
    await Deno.readTextFile(
      new URL("../supabase/functions/sluice.manifest.json", import.meta.url),
    ),
  ) as {
    functions: {
      function_name: string;
      flow_slug: string;
      step_slug: string | null;
      queue_name: string;
    }[];
  };
  return manifest.functions.map((entry) => {
    const flow = BY_SLUG.get(entry.flow_slug);
    if (flow === undefined) {
      throw new Error(
        `the manifest names flow "${entry.flow_slug}", which flows.ts does not export`,
      );
    }
    return {
      functionName: entry.function_name,
      flowSlug: entry.flow_slug,
      stepSlug: entry.step_slug ?? null,
      queueName: entry.queue_name,
      flow,
    };
  });
}

/** Starts the worker of one worker function, as its Edge Function would. */
export async function startFunctionWorker(
  fn: WorkerFunction,
  options: Omit<WorkerOptions, "stepSlug" | "functionName">,
): Promise<WorkerHandle> {
  const stepOption = fn.stepSlug === null ? {} : { stepSlug: fn.stepSlug };
  return await startWorker(fn.flow, {
    ...options,
    ...stepOption,
    functionName: fn.functionName,
  } as WorkerOptions);
}

/** The rows one run of every flow works on. */
export interface Seed {
  readonly accountIds: readonly number[];
  readonly invoiceId: number;
  readonly eventId: number;
  readonly imageId: number;
  readonly orderId: number;
  readonly refundIds: { readonly small: number; readonly large: number };
  readonly day: string;
  readonly week: string;
}

/**
 * Domain rows: three accounts (a fresh trial ending in 2 days, a pro account, one more), an
 * invoice, a webhook event with two live endpoints and one that is down, a 2000 × 1000 image, an
 * order with a small and a large refund request, and a day of activity.
 */
export async function seed(sql: Sql, now = new Date()): Promise<Seed> {
  return await sql.begin(async (tx) => {
    const accounts = await tx<{ id: number }[]>`
      insert into public.accounts (email, name, plan, trial_ends_at) values
        ('ada@example.com', 'Ada', 'trial', ${new Date(now.getTime() + 2 * 86_400_000)}),
        ('grace@example.com', 'Grace', 'pro', null),
        ('linus@example.com', 'Linus', 'trial', null)
      returning id`;
    const [ada, grace] = accounts.map((a) => a.id);
    const [{ id: invoiceId }] = await tx<{ id: number }[]>`
      insert into public.invoices (account_id, amount_cents) values (${grace}, 4900) returning id`;
    await tx`
      insert into public.webhook_endpoints (account_id, url) values
        (${grace}, 'https://hooks.example/a'), (${grace}, 'https://hooks.example/b'),
        (${grace}, 'https://down.example/c')`;
    const [{ id: eventId }] = await tx<{ id: number }[]>`
      insert into public.webhook_events (account_id, type, payload)
      values (${grace}, 'invoice.paid', ${tx.json({ invoiceId })}) returning id`;
    const [{ id: imageId }] = await tx<{ id: number }[]>`
      insert into public.images (account_id, path, width, height)
      values (${grace}, 'avatars/grace.png', 2000, 1000) returning id`;
    const [{ id: orderId }] = await tx<{ id: number }[]>`
      insert into public.orders (account_id, total_cents, placed_at)
      values (${ada}, 25000, ${new Date(now.getTime() - 48 * 3_600_000)}) returning id`;
    const refunds = await tx<{ id: number }[]>`
      insert into public.refunds (order_id, amount_cents, reason) values
        (${orderId}, 1500, 'arrived damaged'), (${orderId}, 25000, 'changed my mind')
      returning id`;
    const day = now.toISOString().slice(0, 10);
    await tx`
      insert into public.activity (account_id, what, at) values
        (${ada}, 'created a dashboard', ${now}), (${grace}, 'invited a teammate', ${now}),
        (${grace}, 'connected a database', ${now})`;
    return {
      accountIds: accounts.map((a) => a.id),
      invoiceId,
      eventId,
      imageId,
      orderId,
      refundIds: { small: refunds[0].id, large: refunds[1].id },
      day,
      week: weekOf(now),
    };
  });
}

/** Starts one run of every flow over `rows` (two of refund_review); returns the run ids by name. */
export async function startEveryFlow(sql: Sql, rows: Seed): Promise<Record<string, string>> {
  const [ada, grace] = rows.accountIds;
  return {
    signup_welcome: await startFlow(sql, flows.signupWelcome, { accountId: ada }),
    invoice_send: await startFlow(sql, flows.invoiceSend, { invoiceId: rows.invoiceId }),
    webhook_fanout: await startFlow(sql, flows.webhookFanout, { eventId: rows.eventId }),
    nightly_export: await startFlow(sql, flows.nightlyExport, { day: rows.day }),
    image_thumbnails: await startFlow(sql, flows.imageThumbnails, { imageId: rows.imageId }),
    password_reset: await startFlow(sql, flows.passwordReset, {
      accountId: grace,
      requestId: "req-1",
    }),
    trial_expiry_reminder: await startFlow(sql, flows.trialExpiryReminder, { accountId: ada }),
    trial_expiry_not_due: await startFlow(sql, flows.trialExpiryReminder, { accountId: grace }),
    refund_small: await startFlow(sql, flows.refundReview, { refundId: rows.refundIds.small }),
    refund_large: await startFlow(sql, flows.refundReview, { refundId: rows.refundIds.large }),
    order_confirmation: await startFlow(sql, flows.orderConfirmation, { orderId: rows.orderId }),
    weekly_digest: await startFlow(sql, flows.weeklyDigest, { accountId: grace, week: rows.week }),
  };
}
