// withStepQueues() keeps the exact flow type and step-slug union. Checked by
// `deno check tests/types/`, never run.

import {
  Flow,
  type StepQueuedFlow,
  type StepRoute,
  type StepSlug,
  withStepQueues,
} from "../../mod.ts";
import { extractDefinition, isStepQueuedFlow } from "../../src/admin/mod.ts";
import type { Equals } from "./_equals.ts";

const flow = new Flow<{ id: number }>({ slug: "orders" })
  .step({ slug: "slow" }, (input) => input.id)
  .step({ slug: "fast" }, (input) => String(input.id));

const queued = withStepQueues(flow);

const _type: Equals<typeof queued, StepQueuedFlow<typeof flow>> = true;
const _flow: Equals<typeof queued.flow, typeof flow> = true;
const _slugs: Equals<StepSlug<typeof queued>, "slow" | "fast"> = true;
const _routes: Equals<typeof queued.routes, readonly StepRoute<"slow" | "fast">[]> = true;
const _mode: Equals<typeof queued.queueMode, "step"> = true;

export const slow: StepSlug<typeof queued> = "slow";
// @ts-expect-error "medium" is not a step of the flow
export const medium: StepSlug<typeof queued> = "medium";

// The wrapped flow still builds with exact inference.
queued.flow.step({ slug: "both", dependsOn: ["slow", "fast"] }, (deps) => {
  const _deps: Equals<typeof deps, { slow: number; fast: string }> = true;
  return deps.fast.length + deps.slow;
});

// Both modes extract a definition.
extractDefinition(flow);
extractDefinition(queued);

// @ts-expect-error a step-queued flow cannot be wrapped again
withStepQueues(queued);
// @ts-expect-error withStepQueues takes a Flow
withStepQueues({ slug: "orders", steps: [] });

// @ts-expect-error a look-alike object is not a StepQueuedFlow
export const forged: StepQueuedFlow<typeof flow> = {
  flow,
  queueMode: "step",
  routes: [{ stepSlug: "slow", queueName: "orders__slow" }],
};

declare const value: unknown;
if (isStepQueuedFlow(value)) {
  const _narrowed: Equals<typeof value, StepQueuedFlow> = true;
}
