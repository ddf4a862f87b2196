/**
 * The back office's ten flows in the co-hosted layout: the same flows and handlers as
 * `flows.ts`, every one step-queued (each step keeps its own queue and worker), and their steps
 * co-hosted in six worker functions by workload class instead of one function per step:
 *
 * - `office-interactive`: the light steps a person waits for (mails, small writes, decisions);
 * - `office-bulk`: the light steps of the scheduled sweeps (nightly export, Monday's digests, the
 *   daily trial check);
 * - one function each for the steps that are slow or call a service the team does not control:
 *   PDF rendering, image resizing, webhook deliveries, refund payouts.
 *
 * `sluice functions generate` on this module writes six Edge Functions instead of `flows.ts`'s
 * 25 (tests/examples/back_office/cohosted_test.ts). The plain flows of `flows.ts` become
 * step-queued here, which is a new shape for their concrete slugs: a project switching layouts
 * deploys them under new slugs (docs/versions.md).
 *
 * @module
 */

import { withStepQueues } from "@sluice/sluice";
import * as flows from "./flows.ts";

const interactive = "office-interactive";
const bulk = "office-bulk";

/** Signup: every step light. */
export const signupWelcome = withStepQueues(flows.signupWelcome, {
  functions: {
    apply_defaults: interactive,
    send_welcome: interactive,
    start_onboarding: interactive,
  },
});

/** Invoices: the PDF rendering in its own function, the rest interactive. */
export const invoiceSend = withStepQueues(flows.invoiceSend.flow, {
  functions: {
    render_pdf: "office-render",
    store_pdf: interactive,
    email_invoice: interactive,
    mark_sent: interactive,
  },
});

/** Webhooks: the deliveries to customers' receivers in their own function. */
export const webhookFanout = withStepQueues(flows.webhookFanout.flow, {
  functions: { endpoints: interactive, deliver: "office-webhooks", summarize: interactive },
});

/** The nightly export: a sweep, every step bulk. */
export const nightlyExport = withStepQueues(flows.nightlyExport.flow, {
  functions: { collect: bulk, write_csv: bulk, upload: bulk, notify_admins: bulk },
});

/** Thumbnails: the resizing in its own function. */
export const imageThumbnails = withStepQueues(flows.imageThumbnails.flow, {
  functions: { plan: interactive, resize: "office-media", record: interactive },
});

/** Password reset: light. */
export const passwordReset = withStepQueues(flows.passwordReset, {
  functions: { issue_token: interactive, send_reset_mail: interactive },
});

/** The daily trial check: bulk. */
export const trialExpiryReminder = withStepQueues(flows.trialExpiryReminder, {
  functions: { check_trial: bulk, send_reminder: bulk },
});

/** Refunds: the payout in its own function. */
export const refundReview = withStepQueues(flows.refundReview.flow, {
  functions: {
    score: interactive,
    decide: interactive,
    pay_out: "office-payments",
    notify_customer: interactive,
  },
});

/** Order confirmation: light. */
export const orderConfirmation = withStepQueues(flows.orderConfirmation, {
  functions: { send_confirmation: interactive, mark_confirmed: interactive },
});

/** The Monday digest: bulk. */
export const weeklyDigest = withStepQueues(flows.weeklyDigest.flow, {
  functions: { collect_activity: bulk, render_digest: bulk, send_digest: bulk },
});
