/**
 * The back office's ten flows. Most are small and light (a lookup, a mail, a row): plain flows,
 * one queue and one worker function each. The ones with a step that is slow, heavy or calls
 * receivers the team does not control are wrapped with `withStepQueues()`, so that step gets its
 * own queue and workers and cannot hold up the light steps next to it; every other step of such a
 * flow gets its own queue and function too, because that is what `withStepQueues()` does today.
 * `deno task functions:generate` writes one Edge Function per plain flow and per step of a
 * step-queued flow.
 *
 * @module
 */

import { Flow, withStepQueues } from "@sluice/sluice";
import {
  AUTO_APPROVE_CENTS,
  loadAccount,
  mailOnce,
  riskScore,
  sha256,
  storeObject,
  weekOf,
} from "./office.ts";
import { servicesFromEnv } from "./services.ts";

/** Signup: default settings, the welcome mail, the first onboarding step. Light: plain. */
export const signupWelcome = new Flow<{ accountId: number }>({
  slug: "signup_welcome",
  maxAttempts: 3,
  timeout: 10,
})
  .step({ slug: "apply_defaults" }, async (input, ctx) => {
    const [row] = await ctx.sql<{ trialEndsAt: Date }[]>`
      update public.accounts
      set trial_ends_at = coalesce(trial_ends_at, created_at + interval '14 days')
      where id = ${input.accountId}
      returning trial_ends_at as "trialEndsAt"`;
    if (row === undefined) throw new Error(`account ${input.accountId} does not exist`);
    return { trialEndsAt: row.trialEndsAt.toISOString() };
  })
  .step({ slug: "send_welcome", dependsOn: ["apply_defaults"] }, async (deps, ctx) => {
    const account = await loadAccount(ctx.sql, ctx.flowInput.accountId);
    const emailId = await mailOnce(ctx.sql, servicesFromEnv(ctx.env), account, {
      kind: "welcome",
      subject: `Welcome, ${account.name}`,
      body: `Your trial runs until ${deps.apply_defaults.trialEndsAt.slice(0, 10)}.`,
    }, ctx.signal);
    return { emailId };
  })
  .step({ slug: "start_onboarding", dependsOn: ["send_welcome"] }, async (_deps, ctx) => {
    await ctx.sql`
      update public.accounts set onboarding_step = coalesce(onboarding_step, 'connect_data')
      where id = ${ctx.flowInput.accountId}`;
    return { step: "connect_data" };
  });

/**
 * Invoice: render the PDF (slow, CPU-bound), store it, mail it, mark it sent. Rendering gets its
 * own workers: step-queued.
 */
export const invoiceSend = withStepQueues(
  new Flow<{ invoiceId: number }>({ slug: "invoice_send", maxAttempts: 3, timeout: 30 })
    .step({ slug: "render_pdf", timeout: 60 }, async (input, ctx) => {
      const [invoice] = await ctx.sql<{ accountId: number; amountCents: number }[]>`
        select account_id as "accountId", amount_cents as "amountCents"
        from public.invoices where id = ${input.invoiceId}`;
      if (invoice === undefined) throw new Error(`invoice ${input.invoiceId} does not exist`);
      const pdf = await servicesFromEnv(ctx.env).renderPdf(`Invoice ${input.invoiceId}`, [
        `Amount: ${(invoice.amountCents / 100).toFixed(2)} EUR`,
      ], ctx.signal);
      // Outputs are JSON: the PDF travels base64-encoded to the next step.
      return { pdf: btoa(String.fromCharCode(...pdf)), accountId: invoice.accountId };
    })
    .step({ slug: "store_pdf", dependsOn: ["render_pdf"] }, async (deps, ctx) => {
      const path = `invoices/${ctx.flowInput.invoiceId}.pdf`;
      const bytes = Uint8Array.from(atob(deps.render_pdf.pdf), (c) => c.charCodeAt(0));
      await storeObject(ctx.sql, path, "application/pdf", bytes);
      await ctx.sql`
        update public.invoices set status = 'rendered', pdf_path = ${path}
        where id = ${ctx.flowInput.invoiceId} and status = 'draft'`;
      return { path };
    })
    .step({ slug: "email_invoice", dependsOn: ["render_pdf", "store_pdf"] }, async (deps, ctx) => {
      const account = await loadAccount(ctx.sql, deps.render_pdf.accountId);
      const emailId = await mailOnce(ctx.sql, servicesFromEnv(ctx.env), account, {
        kind: "invoice",
        dedupeKey: String(ctx.flowInput.invoiceId),
        subject: `Invoice ${ctx.flowInput.invoiceId}`,
        body: `Download: ${deps.store_pdf.path}`,
      }, ctx.signal);
      return { emailId };
    })
    .step({ slug: "mark_sent", dependsOn: ["email_invoice"] }, async (_deps, ctx) => {
      await ctx.sql`
        update public.invoices set status = 'sent', sent_at = coalesce(sent_at, now())
        where id = ${ctx.flowInput.invoiceId}`;
      return { sent: true };
    }),
);

/**
 * Webhook fan-out: one delivery per active endpoint of the account (a map), then a summary. The
 * receivers are the customers' servers, slow or down at times: step-queued, so a stuck receiver
 * only holds up deliveries.
 */
export const webhookFanout = withStepQueues(
  new Flow<{ eventId: number }>({ slug: "webhook_fanout", maxAttempts: 3, timeout: 15 })
    .array({ slug: "endpoints" }, async (input, ctx) => {
      const rows = await ctx.sql<{ id: number; url: string }[]>`
        select e.id, e.url from public.webhook_endpoints e
        join public.webhook_events ev on ev.account_id = e.account_id
        where ev.id = ${input.eventId} and e.active order by e.id`;
      return rows.map((row) => ({ id: row.id, url: row.url }));
    })
    .map(
      { slug: "deliver", array: "endpoints", maxAttempts: 4, baseDelay: 1 },
      async (endpoint, ctx) => {
        const [event] = await ctx.sql<{ type: string; payload: unknown }[]>`
          select type, payload from public.webhook_events where id = ${ctx.flowInput.eventId}`;
        const status = await servicesFromEnv(ctx.env).postWebhook(endpoint.url, event, ctx.signal);
        const delivered = status >= 200 && status < 300;
        // The last attempt records the failure; earlier ones throw to be retried.
        if (!delivered && ctx.attempt < ctx.maxAttempts) {
          throw new Error(`${endpoint.url} answered ${status}`);
        }
        await ctx.sql`
          insert into public.webhook_deliveries (event_id, endpoint_id, status, attempts, response_code)
          values (${ctx.flowInput.eventId}, ${endpoint.id}, ${delivered ? "delivered" : "failed"},
            ${ctx.attempt}, ${status})
          on conflict (event_id, endpoint_id) do nothing`;
        return { endpointId: endpoint.id, delivered };
      },
    )
    .step({ slug: "summarize", dependsOn: ["deliver"] }, async (deps, ctx) => {
      const delivered = deps.deliver.filter((d) => d.delivered).length;
      const failed = deps.deliver.length - delivered;
      await ctx.sql`
        update public.webhook_events set fanned_out_at = now(), delivered = ${delivered},
          failed = ${failed}
        where id = ${ctx.flowInput.eventId}`;
      return { delivered, failed };
    }),
);

/**
 * Nightly export: collect the day's activity, write it as CSV, upload it, tell the admins. The
 * collection scans a whole day: step-queued, so it runs on workers of its own.
 */
export const nightlyExport = withStepQueues(
  new Flow<{ day: string }>({ slug: "nightly_export", maxAttempts: 2, timeout: 120 })
    .step({ slug: "collect" }, async (input, ctx) => {
      await ctx.sql`
        insert into public.exports (day) values (${input.day}::date) on conflict (day) do nothing`;
      const rows = await ctx.sql<{ accountId: number; what: string; at: Date }[]>`
        select account_id as "accountId", what, at from public.activity
        where at >= ${input.day}::date and at < ${input.day}::date + 1 order by id`;
      return { rows: rows.map((r) => [r.accountId, r.what, r.at.toISOString()]) };
    })
    .step({ slug: "write_csv", dependsOn: ["collect"] }, (deps) => {
      const quote = (v: unknown) => `"${String(v).replaceAll('"', '""')}"`;
      const lines = deps.collect.rows.map((row) => row.map(quote).join(","));
      return { csv: ["account_id,what,at", ...lines].join("\n"), rowCount: lines.length };
    })
    .step({ slug: "upload", dependsOn: ["write_csv"] }, async (deps, ctx) => {
      const path = `exports/${ctx.flowInput.day}.csv`;
      await storeObject(ctx.sql, path, "text/csv", new TextEncoder().encode(deps.write_csv.csv));
      await ctx.sql`
        update public.exports set status = 'uploaded', row_count = ${deps.write_csv.rowCount},
          object_path = ${path}
        where day = ${ctx.flowInput.day}::date`;
      return { path };
    })
    .step({ slug: "notify_admins", dependsOn: ["upload", "write_csv"] }, async (deps, ctx) => {
      const admins = await ctx.sql<{ id: number }[]>`
        select id from public.accounts where plan = 'pro' order by id limit 5`;
      const services = servicesFromEnv(ctx.env);
      for (const { id } of admins) {
        await mailOnce(ctx.sql, services, await loadAccount(ctx.sql, id), {
          kind: "export_ready",
          dedupeKey: ctx.flowInput.day,
          subject: `Export of ${ctx.flowInput.day}: ${deps.write_csv.rowCount} rows`,
          body: deps.upload.path,
        }, ctx.signal);
      }
      return { notified: admins.length };
    }),
);

/** The thumbnail widths every uploaded image gets. */
export const THUMBNAIL_WIDTHS = [64, 256, 1024] as const;

/**
 * Thumbnails: load the image, resize it to every width (a map; the heavy step), record them.
 * Resizing is the slow step of the whole back office: step-queued.
 */
export const imageThumbnails = withStepQueues(
  new Flow<{ imageId: number }>({ slug: "image_thumbnails", maxAttempts: 3, timeout: 60 })
    .array({ slug: "plan" }, async (input, ctx) => {
      const [image] = await ctx.sql<{ width: number; height: number; path: string }[]>`
        select width, height, path from public.images where id = ${input.imageId}`;
      if (image === undefined) throw new Error(`image ${input.imageId} does not exist`);
      return THUMBNAIL_WIDTHS.filter((w) => w < image.width).map((width) => ({ ...image, width }));
    })
    .map({ slug: "resize", array: "plan" }, async (job, ctx) => {
      const original = await ctx.sql<{ width: number; height: number }[]>`
        select width, height from public.images where id = ${ctx.flowInput.imageId}`;
      const size = await servicesFromEnv(ctx.env).resize(original[0], job.width, ctx.signal);
      const path = `${job.path.replace(/\.\w+$/, "")}_${size.width}w.webp`;
      await storeObject(ctx.sql, path, "image/webp", new Uint8Array(Math.min(size.bytes, 4096)));
      return { ...size, path };
    })
    .step({ slug: "record", dependsOn: ["resize"] }, async (deps, ctx) => {
      for (const thumb of deps.resize) {
        await ctx.sql`
          insert into public.thumbnails (image_id, width, height, object_path)
          values (${ctx.flowInput.imageId}, ${thumb.width}, ${thumb.height}, ${thumb.path})
          on conflict (image_id, width) do nothing`;
      }
      return { thumbnails: deps.resize.length };
    }),
);

/** Password reset: issue a token, mail it. Latency-sensitive and light: plain. */
export const passwordReset = new Flow<{ accountId: number; requestId: string }>({
  slug: "password_reset",
  maxAttempts: 3,
  timeout: 10,
})
  .step({ slug: "issue_token" }, async (input, ctx) => {
    // The token is derived from the request id, so a retried step issues the same one.
    const token = (await sha256(`reset:${input.requestId}`)).slice(0, 32);
    const tokenHash = await sha256(token);
    await ctx.sql`
      insert into public.password_resets (account_id, token_hash, expires_at)
      select ${input.accountId}, ${tokenHash}, now() + interval '1 hour'
      where not exists (select 1 from public.password_resets where token_hash = ${tokenHash})`;
    return { token };
  })
  .step({ slug: "send_reset_mail", dependsOn: ["issue_token"] }, async (deps, ctx) => {
    const account = await loadAccount(ctx.sql, ctx.flowInput.accountId);
    const emailId = await mailOnce(ctx.sql, servicesFromEnv(ctx.env), account, {
      kind: "password_reset",
      dedupeKey: ctx.flowInput.requestId,
      subject: "Reset your password",
      body: `https://app.example/reset?token=${deps.issue_token.token}`,
    }, ctx.signal);
    return { emailId };
  });

/** Trial expiry: reminds an account whose trial ends within 3 days. Light: plain. */
export const trialExpiryReminder = new Flow<{ accountId: number }>({
  slug: "trial_expiry_reminder",
  maxAttempts: 3,
  timeout: 10,
})
  .step({ slug: "check_trial" }, async (input, ctx) => {
    const account = await loadAccount(ctx.sql, input.accountId);
    const daysLeft = account.trialEndsAt === null
      ? null
      : Math.ceil((account.trialEndsAt.getTime() - Date.now()) / 86_400_000);
    const due = account.plan === "trial" && daysLeft !== null && daysLeft >= 0 && daysLeft <= 3;
    return { due, daysLeft: daysLeft ?? -1 };
  })
  .step(
    { slug: "send_reminder", dependsOn: ["check_trial"], if: { check_trial: { due: true } } },
    async (deps, ctx) => {
      const account = await loadAccount(ctx.sql, ctx.flowInput.accountId);
      const emailId = await mailOnce(ctx.sql, servicesFromEnv(ctx.env), account, {
        kind: "trial_reminder",
        dedupeKey: account.trialEndsAt!.toISOString().slice(0, 10),
        subject: `Your trial ends in ${deps.check_trial.daysLeft} days`,
        body: "Pick a plan to keep your data.",
      }, ctx.signal);
      return { emailId };
    },
  );

/**
 * Refund review: score the risk, decide, pay out an approved refund, tell the customer. The
 * payout calls the payment provider with its own attempt budget and isolation: step-queued.
 */
export const refundReview = withStepQueues(
  new Flow<{ refundId: number }>({ slug: "refund_review", maxAttempts: 3, timeout: 20 })
    .step({ slug: "score" }, async (input, ctx) => {
      const [row] = await ctx.sql<
        { amountCents: number; ageHours: number; earlier: number }[]
      >`
        select r.amount_cents as "amountCents",
          extract(epoch from now() - o.placed_at)::float8 / 3600 as "ageHours",
          (select count(*)::int from public.refunds r2 join public.orders o2 on o2.id = r2.order_id
            where o2.account_id = o.account_id and r2.id <> r.id) as earlier
        from public.refunds r join public.orders o on o.id = r.order_id
        where r.id = ${input.refundId}`;
      if (row === undefined) throw new Error(`refund ${input.refundId} does not exist`);
      const risk = riskScore(row.amountCents, row.ageHours, row.earlier);
      await ctx.sql`update public.refunds set risk_score = ${risk} where id = ${input.refundId}`;
      return { risk, amountCents: row.amountCents };
    })
    .step({ slug: "decide", dependsOn: ["score"] }, async (deps, ctx) => {
      const approved = deps.score.risk < 40 && deps.score.amountCents <= AUTO_APPROVE_CENTS;
      await ctx.sql`
        update public.refunds set status = ${approved ? "approved" : "rejected"},
          decided_at = now()
        where id = ${ctx.flowInput.refundId} and status = 'requested'`;
      return { approved };
    })
    .step(
      {
        slug: "pay_out",
        dependsOn: ["decide", "score"],
        if: { decide: { approved: true } },
        maxAttempts: 5,
        baseDelay: 2,
      },
      async (deps, ctx) => {
        const [refund] = await ctx.sql<{ orderId: number; paymentRef: string | null }[]>`
          select order_id as "orderId", payment_ref as "paymentRef"
          from public.refunds where id = ${ctx.flowInput.refundId}`;
        const ref = refund.paymentRef ??
          await servicesFromEnv(ctx.env).refund(
            refund.orderId,
            deps.score.amountCents,
            ctx.signal,
          );
        await ctx.sql`
          update public.refunds set status = 'paid', payment_ref = ${ref}
          where id = ${ctx.flowInput.refundId}`;
        return { ref };
      },
    )
    .step({ slug: "notify_customer", dependsOn: ["decide"] }, async (deps, ctx) => {
      const [owner] = await ctx.sql<{ accountId: number }[]>`
        select o.account_id as "accountId" from public.refunds r
        join public.orders o on o.id = r.order_id where r.id = ${ctx.flowInput.refundId}`;
      const emailId = await mailOnce(
        ctx.sql,
        servicesFromEnv(ctx.env),
        await loadAccount(ctx.sql, owner.accountId),
        {
          kind: "refund_decision",
          dedupeKey: String(ctx.flowInput.refundId),
          subject: deps.decide.approved ? "Your refund is on its way" : "About your refund",
          body: deps.decide.approved ? "Approved." : "A person will review it.",
        },
        ctx.signal,
      );
      return { emailId };
    }),
);

/** Order confirmation: mail the confirmation, mark the order confirmed. Light: plain. */
export const orderConfirmation = new Flow<{ orderId: number }>({
  slug: "order_confirmation",
  maxAttempts: 3,
  timeout: 10,
})
  .step({ slug: "send_confirmation" }, async (input, ctx) => {
    const [order] = await ctx.sql<{ accountId: number; totalCents: number }[]>`
      select account_id as "accountId", total_cents as "totalCents"
      from public.orders where id = ${input.orderId}`;
    if (order === undefined) throw new Error(`order ${input.orderId} does not exist`);
    const emailId = await mailOnce(
      ctx.sql,
      servicesFromEnv(ctx.env),
      await loadAccount(ctx.sql, order.accountId),
      {
        kind: "order_confirmation",
        dedupeKey: String(input.orderId),
        subject: `Order ${input.orderId} confirmed`,
        body: `Total: ${(order.totalCents / 100).toFixed(2)} EUR`,
      },
      ctx.signal,
    );
    return { emailId };
  })
  .step({ slug: "mark_confirmed", dependsOn: ["send_confirmation"] }, async (_deps, ctx) => {
    await ctx.sql`
      update public.orders set status = 'confirmed', confirmed_at = coalesce(confirmed_at, now())
      where id = ${ctx.flowInput.orderId}`;
    await ctx.sql`
      insert into public.activity (account_id, what)
      select account_id, 'order ' || id || ' confirmed' from public.orders
      where id = ${ctx.flowInput.orderId}`;
    return { confirmed: true };
  });

/**
 * Weekly digest of one account: collect its week's activity, render the digest, mail it. Runs
 * for every account at once on Monday morning, a burst: step-queued, so the burst has its own
 * workers.
 */
export const weeklyDigest = withStepQueues(
  new Flow<{ accountId: number; week: string }>({
    slug: "weekly_digest",
    maxAttempts: 3,
    timeout: 30,
  })
    .step({ slug: "collect_activity" }, async (input, ctx) => {
      const rows = await ctx.sql<{ what: string }[]>`
        select what from public.activity
        where account_id = ${input.accountId} and at >= ${input.week}::date
          and at < ${input.week}::date + 7
        order by id`;
      return { items: rows.map((row) => row.what) };
    })
    .step({ slug: "render_digest", dependsOn: ["collect_activity"] }, (deps, ctx) => {
      const items = deps.collect_activity.items;
      const body = items.length === 0
        ? "A quiet week."
        : items.map((item, i) => `${i + 1}. ${item}`).join("\n");
      return {
        subject: `Your week of ${weekOf(new Date(ctx.flowInput.week))}`,
        body,
        count: items.length,
      };
    })
    .step({ slug: "send_digest", dependsOn: ["render_digest"] }, async (deps, ctx) => {
      const account = await loadAccount(ctx.sql, ctx.flowInput.accountId);
      const emailId = await mailOnce(ctx.sql, servicesFromEnv(ctx.env), account, {
        kind: "weekly_digest",
        dedupeKey: ctx.flowInput.week,
        subject: deps.render_digest.subject,
        body: deps.render_digest.body,
      }, ctx.signal);
      await ctx.sql`
        insert into public.digests (account_id, week, item_count, email_id)
        values (${account.id}, ${ctx.flowInput.week}::date, ${deps.render_digest.count}, ${emailId})
        on conflict (account_id, week) do nothing`;
      return { emailId };
    }),
);
