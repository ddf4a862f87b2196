// Subflows keep exact inference: the input function receives the one dependency's output and must
// return the child flow's input; the step's output is the child run's output (its leaf steps),
// through any depth of nesting, for a plain, step-queued or deployed child; a map subflow's output
// is the array of its children's outputs. Checked by `deno check tests/types/`, never run.

import {
  defineDeployedFlow,
  Flow,
  type FlowOutput,
  type StepInput,
  type StepOutput,
  withStepQueues,
} from "../../mod.ts";
import type { Equals } from "./_equals.ts";

export const grandchild = new Flow<{ seat: string }>({ slug: "invite" })
  .step({ slug: "send" }, (input) => ({ sent: input.seat, at: 1 }));

export const child = new Flow<{ account: string; seats: string[] }>({ slug: "provision" })
  .step({ slug: "create" }, (input) => ({ id: `acct_${input.account}`, seats: input.seats }))
  .mapSubflow({
    slug: "invites",
    dependsOn: ["create"],
    flow: grandchild,
    input: (deps) => {
      const _deps: Equals<typeof deps, { create: { id: string; seats: string[] } }> = true;
      return deps.create.seats.map((seat) => ({ seat }));
    },
  })
  .step({ slug: "done", dependsOn: ["invites"] }, (deps) => {
    const _deps: Equals<typeof deps, { invites: { send: { sent: string; at: number } }[] }> = true;
    return deps.invites.length;
  });

export const parent = new Flow<{ name: string }>({ slug: "onboard" })
  .step({ slug: "load" }, (input) => ({ name: input.name, seats: ["a", "b"] }))
  .subflow({
    slug: "account",
    dependsOn: ["load"],
    flow: child,
    input: (deps) => ({ account: deps.load.name, seats: deps.load.seats }),
  })
  .subflow({
    slug: "queued",
    dependsOn: ["load"],
    flow: withStepQueues(grandchild),
    input: (deps) => ({ seat: deps.load.name }),
  })
  .subflow({
    slug: "deployed",
    dependsOn: ["load"],
    flow: defineDeployedFlow(grandchild, { alias: "invite_current" }),
    input: (deps) => ({ seat: deps.load.name }),
  })
  .step({ slug: "welcome", dependsOn: ["account", "queued", "deployed"] }, (deps) => {
    const _deps: Equals<typeof deps, {
      account: { done: number };
      queued: { send: { sent: string; at: number } };
      deployed: { send: { sent: string; at: number } };
    }> = true;
    return `${deps.account.done} seats`;
  });

const _account: Equals<StepOutput<typeof parent, "account">, FlowOutput<typeof child>> = true;
const _invites: Equals<
  StepOutput<typeof child, "invites">,
  { send: { sent: string; at: number } }[]
> = true;
const _input: Equals<
  StepInput<typeof parent, "account">,
  { load: { name: string; seats: string[] } }
> = true;

new Flow<{ name: string }>({ slug: "wrong_input" })
  .step({ slug: "load" }, (input) => input.name)
  // @ts-expect-error the child's input is { seat: string }, not a string
  .subflow({ slug: "bad", dependsOn: ["load"], flow: grandchild, input: (deps) => deps.load });

new Flow<{ name: string }>({ slug: "wrong_map_input" })
  .step({ slug: "load" }, (input) => input.name)
  .mapSubflow({
    slug: "bad",
    dependsOn: ["load"],
    flow: grandchild,
    // @ts-expect-error a map subflow's input function returns an array of child inputs
    input: (deps) => ({ seat: deps.load }),
  });

new Flow<{ name: string }>({ slug: "unknown_dep" })
  .step({ slug: "load" }, (input) => input.name)
  // @ts-expect-error "nope" is no step of the flow
  .subflow({ slug: "bad", dependsOn: ["nope"], flow: grandchild, input: () => ({ seat: "x" }) });
