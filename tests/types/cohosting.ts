// withStepQueues(flow, { functions }): the keys of the co-hosting map are the flow's step slugs
// (they autocomplete; an unknown slug or a slug given twice is a type error), and `functions`
// maps every step to its function. Checked by `deno check tests/types/`, never run.

import { defineDeployedFlow, Flow, type StepQueuesOptions, withStepQueues } from "../../mod.ts";
import { serveWorkers, type ServeWorkersOptions } from "../../src/edge/mod.ts";
import type { Equals } from "./_equals.ts";

const flow = new Flow<{ id: number }>({ slug: "invoice_send" })
  .step({ slug: "render_pdf" }, (input) => input.id)
  .step({ slug: "email_invoice", dependsOn: ["render_pdf"] }, () => true)
  .step({ slug: "mark_sent", dependsOn: ["email_invoice"] }, () => true);

const invoices = withStepQueues(flow, {
  functions: { email_invoice: "office-interactive", mark_sent: "office-interactive" },
});
const _functions: Equals<
  typeof invoices.functions,
  { readonly render_pdf: string; readonly email_invoice: string; readonly mark_sent: string }
> = true;
const _options: Equals<
  NonNullable<StepQueuesOptions<"a" | "b">["functions"]>,
  { readonly a?: string; readonly b?: string }
> = true;

// @ts-expect-error "render" is not a step of the flow
withStepQueues(flow, { functions: { render: "office-render" } });
withStepQueues(flow, {
  // A duplicate key is also deno lint's no-dupe-keys; here the type checker's error is the point.
  // deno-lint-ignore no-dupe-keys
  functions: {
    render_pdf: "office-render",
    // @ts-expect-error a step is hosted by one function: a slug given twice is an error
    render_pdf: "office-interactive",
  },
});
// @ts-expect-error function names are strings
withStepQueues(flow, { functions: { render_pdf: 1 } });
// @ts-expect-error functions maps slugs, not a list of them
withStepQueues(flow, { functions: ["render_pdf"] });

// A co-hosting function serves step-queued and deployed step-queued flows; its name is required.
const deployed = defineDeployedFlow(invoices, { alias: "invoices" });
export const options: ServeWorkersOptions = { functionName: "office-interactive", port: 0 };
export const serve = () => serveWorkers([invoices, deployed], options);
// @ts-expect-error functionName is required
export const unnamed: ServeWorkersOptions = { port: 0 };
