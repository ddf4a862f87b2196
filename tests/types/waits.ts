// Durable waits keep exact inference: a sleep's output is its wake time, a signal wait's output is
// its payload (or the typed timeout value), dependents read both like any step output, and a
// timeout that skips makes the wait optional for its dependents. Checked by `deno check
// tests/types/`, never run.

import {
  defineDeployedFlow,
  Flow,
  type Json,
  signalPayload,
  type StepInput,
  type StepOutput,
  withStepQueues,
} from "../../mod.ts";
import type { Equals } from "./_equals.ts";

type Decision = { approved: boolean; by: string };

export const refund = new Flow<{ refundId: string; amount: number }>({ slug: "refund" })
  .step({ slug: "request" }, (input) => ({ id: input.refundId, large: input.amount > 100 }))
  .sleep({ slug: "cool_off", dependsOn: ["request"] }, (deps) => {
    const _deps: Equals<typeof deps, { request: { id: string; large: boolean } }> = true;
    return deps.request.large ? { seconds: 3600 } : new Date();
  })
  .waitForSignal({
    slug: "decision",
    dependsOn: ["request"],
    key: (deps) => {
      const _deps: Equals<typeof deps, { request: { id: string; large: boolean } }> = true;
      return `refund:${deps.request.id}`;
    },
    payload: signalPayload<Decision>(),
  })
  .waitForSignal({
    slug: "second_look",
    dependsOn: ["request"],
    key: (deps) => `second:${deps.request.id}`,
    payload: signalPayload<Decision>(),
    timeoutSeconds: 48 * 3600,
    onTimeout: { value: { timedOut: true } },
  })
  .waitForSignal({
    slug: "optional_note",
    dependsOn: ["request"],
    key: (deps) => `note:${deps.request.id}`,
    payload: signalPayload<string>(),
    timeoutSeconds: 60,
    onTimeout: "skip",
  })
  .waitForSignal({ slug: "anything", dependsOn: ["request"], key: () => "any" })
  .step(
    {
      slug: "settle",
      dependsOn: ["cool_off", "decision", "second_look", "optional_note", "anything"],
    },
    (deps) => {
      const _deps: Equals<typeof deps, {
        cool_off: string;
        decision: Decision;
        second_look: Decision | { readonly timedOut: true };
        optional_note?: string;
        anything: Json;
      }> = true;
      return deps.decision.approved;
    },
  );

const _sleep: Equals<StepOutput<typeof refund, "cool_off">, string> = true;
const _decision: Equals<StepOutput<typeof refund, "decision">, Decision> = true;
// The timeout value's type is inferred exactly as written (a const type parameter).
const _timeoutValue: Equals<
  StepOutput<typeof refund, "second_look">,
  Decision | { readonly timedOut: true }
> = true;
const _waitInput: Equals<
  StepInput<typeof refund, "decision">,
  { request: { id: string; large: boolean } }
> = true;
const _settle: Equals<StepOutput<typeof refund, "settle">, boolean> = true;

// The wrappers keep the wait steps' types.
const queued = withStepQueues(refund);
queued.flow.step({ slug: "after", dependsOn: ["decision"] }, (deps) => {
  const _deps: Equals<typeof deps, { decision: Decision }> = true;
  return deps.decision.by;
});
const deployed = defineDeployedFlow(refund, { alias: "refund" });
const _deployedDecision: Equals<StepOutput<typeof deployed, "decision">, Decision> = true;

// A skipped dependency makes the wait skippable too: its dependent sees it as optional.
new Flow<{ id: number }>({ slug: "maybe" })
  .step({ slug: "check", if: { id: 1 }, whenUnmet: "skip" }, (input) => input.id)
  .sleep({ slug: "pause", dependsOn: ["check"] }, () => ({ seconds: 1 }))
  .step({ slug: "done", dependsOn: ["pause"] }, (deps) => {
    const _deps: Equals<typeof deps, { pause?: string }> = true;
    return 1;
  });

const base = new Flow<{ id: number }>({ slug: "bad" })
  .step({ slug: "a" }, (input) => input.id)
  .step({ slug: "b" }, (input) => String(input.id));

// @ts-expect-error a wait has exactly one dependency
base.sleep({ slug: "two", dependsOn: ["a", "b"] }, () => ({ seconds: 1 }));
// @ts-expect-error the dependency must be a step of the flow
base.sleep({ slug: "nope", dependsOn: ["c"] }, () => ({ seconds: 1 }));
// @ts-expect-error a due time is a Date or { seconds }
base.sleep({ slug: "late", dependsOn: ["a"] }, () => "tomorrow");
// @ts-expect-error the key is a string
base.waitForSignal({ slug: "k", dependsOn: ["a"], key: (deps) => deps.a });
// @ts-expect-error the key function reads the dependency's exact output
base.waitForSignal({ slug: "k", dependsOn: ["a"], key: (deps) => deps.a.toUpperCase() });
base.waitForSignal({
  slug: "t",
  dependsOn: ["a"],
  key: () => "t",
  // @ts-expect-error onTimeout is "fail", "skip" or { value }
  onTimeout: "retry",
});
