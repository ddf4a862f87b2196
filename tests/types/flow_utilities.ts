// FlowInput, FlowOutput, StepInput, StepOutput and StepSlug, on plain and step-queued flows.
// Checked by `deno check tests/types/`, never run.

import {
  Flow,
  type FlowInput,
  type FlowOutput,
  type Json,
  type StepInput,
  type StepOutput,
  type StepSlug,
  withStepQueues,
} from "../../mod.ts";
import type { Equals } from "./_equals.ts";

type Input = { userId: number; emails: string[] };

export const flow = new Flow<Input>({ slug: "signup" })
  .step({ slug: "user" }, (input) => ({ id: input.userId, name: "n" }))
  .array({ slug: "addresses" }, (input) => input.emails)
  .map({ slug: "verify", array: "addresses" }, (email) => ({ email, ok: email.includes("@") }))
  .step({ slug: "welcome", dependsOn: ["user"], if: { user: { name: "n" } } }, (deps) => {
    return `hi ${deps.user.name}`;
  })
  .step({ slug: "report", dependsOn: ["verify", "user"] }, (deps) => deps.verify.length);

const queued = withStepQueues(flow);

const _input: Equals<FlowInput<typeof flow>, Input> = true;
const _queuedInput: Equals<FlowInput<typeof queued>, Input> = true;

// Leaves are the steps nothing depends on; a skippable leaf is optional.
const _output: Equals<FlowOutput<typeof flow>, { report: number; welcome?: string }> = true;
const _queuedOutput: Equals<FlowOutput<typeof queued>, { report: number; welcome?: string }> = true;

const _slugs: Equals<
  StepSlug<typeof flow>,
  "user" | "addresses" | "verify" | "welcome" | "report"
> = true;
const _queuedSlugs: Equals<StepSlug<typeof queued>, StepSlug<typeof flow>> = true;

const _userIn: Equals<StepInput<typeof flow, "user">, Input> = true;
const _verifyIn: Equals<StepInput<typeof flow, "verify">, string> = true;
const _reportIn: Equals<
  StepInput<typeof flow, "report">,
  { user: { id: number; name: string }; verify: { email: string; ok: boolean }[] }
> = true;
const _welcomeIn: Equals<
  StepInput<typeof queued, "welcome">,
  { user: { id: number; name: string } }
> = true;

const _addressesOut: Equals<StepOutput<typeof flow, "addresses">, string[]> = true;
const _verifyOut: Equals<StepOutput<typeof queued, "verify">, { email: string; ok: boolean }[]> =
  true;
const _welcomeOut: Equals<StepOutput<typeof flow, "welcome">, string> = true;

// An untyped flow takes any JSON input; an empty flow has no slugs and an empty output.
const untyped = new Flow({ slug: "untyped" });
const _untypedInput: Equals<FlowInput<typeof untyped>, Json> = true;
const _noSlugs: Equals<StepSlug<typeof untyped>, never> = true;
const _noOutput: Equals<FlowOutput<typeof untyped>, Record<never, never>> = true;

// @ts-expect-error StepInput only takes a step slug of the flow
export type Unknown = StepInput<typeof flow, "nope">;
