// The flow-control options' types: a step's `concurrency` and `rateLimit`, a start's
// `concurrencyKey`. Every
// `@ts-expect-error` fails the check when its line compiles. Checked by `deno check tests/types/`,
// never run.

import {
  type ConcurrencyLimit,
  connect,
  Flow,
  type FlowControlStartOptions,
  type RateLimit,
  startFlow,
} from "../../mod.ts";
import type { Equals } from "./_equals.ts";

const flow = new Flow<{ customerId: string }>({ slug: "sync" })
  .step({ slug: "push", concurrency: { limit: 2, key: "customerId" } }, (input) => input)
  .step({ slug: "one", concurrency: { limit: 1 } }, () => 1)
  .array({ slug: "records" }, () => ["a", "b"])
  .map({ slug: "each", array: "records", concurrency: { limit: 3 } }, (record) => record);
void flow;

const exact: Equals<ConcurrencyLimit, { readonly limit: number; readonly key?: string }> = true;
void exact;

// @ts-expect-error the limit is a number
new Flow({ slug: "f" }).step({ slug: "s", concurrency: { limit: "2" } }, () => 1);
// @ts-expect-error a limit is required
new Flow({ slug: "f" }).step({ slug: "s", concurrency: { key: "k" } }, () => 1);
// @ts-expect-error the key is a path string, not an array
new Flow({ slug: "f" }).step({ slug: "s", concurrency: { limit: 2, key: ["k"] } }, () => 1);
// @ts-expect-error no other field
new Flow({ slug: "f" }).step({ slug: "s", concurrency: { limit: 2, scope: "fn" } }, () => 1);
// @ts-expect-error concurrency is an object, not a bare number
new Flow({ slug: "f" }).step({ slug: "s", concurrency: 2 }, () => 1);
// @ts-expect-error a wait step takes no concurrency limit
new Flow({ slug: "f" }).sleep({ slug: "s", concurrency: { limit: 2 } }, () => ({ seconds: 1 }));

new Flow({ slug: "f" }).step({ slug: "s", rateLimit: { limit: 5, period: 1 } }, () => 1);
new Flow<{ apiKey: string }>({ slug: "f" }).step(
  { slug: "s", rateLimit: { limit: 5, period: 60, key: "apiKey" } },
  () => 1,
);
const rate: Equals<
  RateLimit,
  { readonly limit: number; readonly period: number; readonly key?: string }
> = true;
void rate;
// @ts-expect-error a rate limit needs its period
new Flow({ slug: "f" }).step({ slug: "s", rateLimit: { limit: 5 } }, () => 1);
// @ts-expect-error the period is a number of seconds
new Flow({ slug: "f" }).step({ slug: "s", rateLimit: { limit: 5, period: "1s" } }, () => 1);

const options: FlowControlStartOptions = { concurrencyKey: "tenant_7", idempotencyKey: "e1" };
void options;
const sql = connect("postgres://localhost/db");
startFlow(sql, flow, { customerId: "c" }, { concurrencyKey: "tenant_7" });
// @ts-expect-error the start's concurrency key is a string
startFlow(sql, flow, { customerId: "c" }, { concurrencyKey: 7 });
