/**
 * The two worker layouts of the back-office example compared by `deno task bench:back_office`:
 * the per-step layout sluice generates today (read from the example's committed manifest) and a
 * grouped layout, which has no product API yet and is written down here as a step -> queue map.
 *
 * @module
 */

import { type WorkerFunction, workerFunctions } from "../examples/back_office/dev/harness.ts";

/** Supabase's Edge Function limits per project, every function included. */
export const FUNCTION_LIMITS = [
  { plan: "Free", functions: 100 },
  { plan: "Pro", functions: 500 },
  { plan: "Team", functions: 1_000 },
] as const;

/**
 * Where each step would run in the grouped layout, by workload class rather than by flow:
 *
 * - `office_interactive`: the light steps a person waits for (mails, small writes, decisions);
 * - `office_bulk`: the light steps of the scheduled sweeps (nightly export, Monday's digests, the
 *   daily trial check), which come in bursts of thousands and must not delay the interactive ones;
 * - one queue per step that is slow or calls a service the team does not control: PDF rendering,
 *   image resizing, webhook deliveries, refund payouts.
 *
 * Every step of every flow is listed: `groupedPlacement()` refuses a step missing here.
 */
export const GROUPED_QUEUES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  signup_welcome: {
    apply_defaults: "office_interactive",
    send_welcome: "office_interactive",
    start_onboarding: "office_interactive",
  },
  invoice_send: {
    render_pdf: "office_render",
    store_pdf: "office_interactive",
    email_invoice: "office_interactive",
    mark_sent: "office_interactive",
  },
  webhook_fanout: {
    endpoints: "office_interactive",
    deliver: "office_webhooks",
    summarize: "office_interactive",
  },
  nightly_export: {
    collect: "office_bulk",
    write_csv: "office_bulk",
    upload: "office_bulk",
    notify_admins: "office_bulk",
  },
  image_thumbnails: {
    plan: "office_interactive",
    resize: "office_media",
    record: "office_interactive",
  },
  password_reset: { issue_token: "office_interactive", send_reset_mail: "office_interactive" },
  trial_expiry_reminder: { check_trial: "office_bulk", send_reminder: "office_bulk" },
  refund_review: {
    score: "office_interactive",
    decide: "office_interactive",
    pay_out: "office_payments",
    notify_customer: "office_interactive",
  },
  order_confirmation: {
    send_confirmation: "office_interactive",
    mark_confirmed: "office_interactive",
  },
  weekly_digest: {
    collect_activity: "office_bulk",
    render_digest: "office_bulk",
    send_digest: "office_bulk",
  },
};

/** One flow of the example and how many worker functions each layout gives it. */
export interface FlowPlacement {
  readonly flowSlug: string;
  readonly mode: "plain" | "step-queued";
  readonly steps: readonly string[];
  /** Per-step layout: the generated functions of this flow. */
  readonly perStep: readonly WorkerFunction[];
  /** Grouped layout: the queue of each step. */
  readonly grouped: Readonly<Record<string, string>>;
}

/** Every flow of the example with both layouts; throws naming a step the grouping misses. */
export async function placements(): Promise<FlowPlacement[]> {
  const functions = await workerFunctions();
  const bySlug = new Map<string, WorkerFunction[]>();
  for (const fn of functions) bySlug.set(fn.flowSlug, [...(bySlug.get(fn.flowSlug) ?? []), fn]);
  return [...bySlug].map(([flowSlug, fns]) => {
    const flow = fns[0].flow;
    const plain = "flow" in flow ? flow.flow as { steps: readonly { slug: string }[] } : flow;
    const steps = (plain as { steps: readonly { slug: string }[] }).steps.map((s) => s.slug);
    const grouped = GROUPED_QUEUES[flowSlug];
    for (const step of steps) {
      if (grouped?.[step] === undefined) {
        throw new Error(`GROUPED_QUEUES has no queue for step "${step}" of flow "${flowSlug}"`);
      }
    }
    return {
      flowSlug,
      mode: fns[0].stepSlug === null ? "plain" : "step-queued",
      steps,
      perStep: fns,
      grouped,
    };
  });
}

/** The distinct queues of the grouped layout, each served by one worker function. */
export function groupedQueues(flows: readonly FlowPlacement[]): string[] {
  return [...new Set(flows.flatMap((flow) => Object.values(flow.grouped)))].sort();
}
