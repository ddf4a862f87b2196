// A flow's input schema types the flow: what a start takes is the schema's input type, what the
// steps receive its output type; without one, the input is the type argument (or Json), as
// before. Checked by `deno check tests/types/`, never run.

import type { Sql } from "postgres";
import {
  Flow,
  type FlowInput,
  type Json,
  type StandardSchemaProps,
  type StandardSchemaV1,
  startFlow,
  type StepInput,
} from "../../mod.ts";
import { startRun } from "../../src/browser/mod.ts";
import type { Equals } from "./_equals.ts";

type OrderIn = { orderId: number; note?: string };
type Order = { orderId: number; note: string };

/** A schema as a library declares one: its own properties besides `~standard` (zod, valibot). */
declare const orderSchema: {
  readonly kind: "object";
  readonly "~standard": StandardSchemaProps<OrderIn, Order>;
};

export const orders = new Flow({ slug: "orders", input: orderSchema })
  .step({ slug: "load" }, (input) => {
    const _input: Equals<typeof input, Order> = true;
    return input.note.length;
  })
  .step({ slug: "ship", dependsOn: ["load"] }, (deps, context) => {
    const _flowInput: Equals<typeof context.flowInput, Order> = true;
    return deps.load;
  });

const _startInput: Equals<FlowInput<typeof orders>, OrderIn> = true;
const _stepInput: Equals<StepInput<typeof orders, "load">, Order> = true;

export async function starts(sql: Sql, supabase: Parameters<typeof startRun>[0]) {
  await startFlow(sql, orders, { orderId: 1 });
  await startFlow(sql, orders, { orderId: 1, note: "gift" });
  // @ts-expect-error: orderId is a number
  await startFlow(sql, orders, { orderId: "1" });
  await startRun(supabase, orders, { orderId: 2 });
  // @ts-expect-error: orderId is required
  await startRun(supabase, orders, {});
}

// A schema whose input and output are one type.
declare const idSchema: StandardSchemaV1<{ id: string }>;
export const byId = new Flow({ slug: "by_id", input: idSchema })
  .step({ slug: "a" }, (input) => input.id);
const _byId: Equals<FlowInput<typeof byId>, { id: string }> = true;

// Without a schema: the type argument, or Json.
export const typed = new Flow<{ n: number }>({ slug: "typed" }).step({ slug: "a" }, (i) => i.n);
const _typed: Equals<FlowInput<typeof typed>, { n: number }> = true;
export const untyped = new Flow({ slug: "untyped" }).step({ slug: "a" }, (input) => {
  const _json: Equals<typeof input, Json> = true;
  return 1;
});
const _untyped: Equals<FlowInput<typeof untyped>, Json> = true;

// A type argument and a schema must agree.
// @ts-expect-error: the schema's output is not the declared input
new Flow<{ n: number }>({ slug: "mismatch", input: idSchema });
