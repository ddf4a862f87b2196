// runFlow keeps the flow's types through every route: its input is the flow input, its output and
// stepOutput are the run's and each step's outputs (an array for a map step), and a step slug
// that the flow lacks does not compile. Checked by `deno check tests/types/`, never run.

import { defineDeployedFlow, Flow, withStepQueues } from "../../mod.ts";
import { type FlowResult, runFlow, type TestDatabase } from "../../src/testing/mod.ts";
import type { Equals } from "./_equals.ts";

declare const db: TestDatabase;

const orders = new Flow<{ ids: number[] }>({ slug: "kit_types" })
  .array({ slug: "ids" }, (input) => input.ids)
  .map({ slug: "price", array: "ids" }, (id) => ({ id, cents: id * 100 }))
  .step({ slug: "total", dependsOn: ["price"] }, (deps) => deps.price.length);

export async function plain(): Promise<void> {
  const result = await runFlow(db, orders, { ids: [1, 2] });
  const _result: Equals<typeof result, FlowResult<typeof orders>> = true;
  const _output: Equals<typeof result.output, { total: number } | null> = true;
  const _price: Equals<
    ReturnType<typeof result.stepOutput<"price">>,
    { id: number; cents: number }[] | null
  > = true;
  const total = result.stepOutput("total");
  const _total: Equals<typeof total, number | null> = true;
  // @ts-expect-error: the flow has no step "missing".
  result.stepOutput("missing");
  // @ts-expect-error: attempts takes one of the flow's step slugs.
  result.attempts("missing");
  // @ts-expect-error: the input is the flow input.
  await runFlow(db, orders, { ids: ["1"] });
}

export async function stepQueued(): Promise<void> {
  const result = await runFlow(db, withStepQueues(orders), { ids: [3] });
  const _output: Equals<typeof result.output, { total: number } | null> = true;
  const total = result.stepOutput("total");
  const _total: Equals<typeof total, number | null> = true;
}

export async function deployed(): Promise<void> {
  const flow = defineDeployedFlow(orders, { alias: "kit_types_alias" });
  const result = await runFlow(db, flow, { ids: [4] });
  const _output: Equals<typeof result.output, { total: number } | null> = true;
}
