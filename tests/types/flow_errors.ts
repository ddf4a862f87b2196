// What the type checker must reject. Every `@ts-expect-error` fails the check when its line
// compiles. Checked by `deno check tests/types/`, never run.

import { Flow } from "../../mod.ts";

type Order = { id: number; status: "new" | "paid" };

const flow = new Flow<Order>({ slug: "orders" })
  .step({ slug: "load" }, (input) => ({ id: input.id }))
  .array({ slug: "lines" }, () => ["a", "b"]);

// Wrong dependency names.
// @ts-expect-error "nope" is not a step of the flow
flow.step({ slug: "x", dependsOn: ["nope"] }, () => 1);
// @ts-expect-error dependency names are case-sensitive
flow.step({ slug: "x", dependsOn: ["Load"] }, () => 1);
// @ts-expect-error a dependency must exist before the step that depends on it
new Flow({ slug: "f" }).step({ slug: "x", dependsOn: ["later"] }, () => 1);
flow.step({ slug: "x", dependsOn: ["load"] }, (deps) => {
  // @ts-expect-error the input only has the declared dependencies
  return deps.lines;
});

// Non-JSON outputs.
// @ts-expect-error a function is not JSON
flow.step({ slug: "x" }, () => () => 1);
// @ts-expect-error a Date is not JSON
flow.step({ slug: "x" }, () => new Date());
// @ts-expect-error an async Date is not JSON either
flow.step({ slug: "x" }, async () => await Promise.resolve(new Date()));
// @ts-expect-error a nested function is not JSON
flow.step({ slug: "x" }, () => ({ ok: true, retry: () => 1 }));
// @ts-expect-error a Map is not JSON
flow.step({ slug: "x" }, () => new Map<string, number>());
// @ts-expect-error bigint is not JSON
flow.step({ slug: "x" }, () => ({ total: 1n }));
// @ts-expect-error a symbol is not JSON
flow.step({ slug: "x" }, () => Symbol("s"));
// @ts-expect-error undefined is not JSON
flow.step({ slug: "x" }, () => undefined);
// @ts-expect-error a handler must return something
flow.step({ slug: "x" }, () => {});
// @ts-expect-error undefined array elements become null in JSON
flow.step({ slug: "x" }, () => [1, undefined]);
// @ts-expect-error map handlers must return JSON too
flow.map({ slug: "x", array: "lines" }, () => new Date());
// @ts-expect-error an array step must return an array
flow.array({ slug: "x" }, () => ({ not: "an array" }));

// Maps over something that is not an array.
// @ts-expect-error "load" outputs an object, not an array
flow.map({ slug: "x", array: "load" }, (item) => item);
// @ts-expect-error a map without `array` maps the flow input, which must be an array
flow.map({ slug: "x" }, (item) => item);
// @ts-expect-error an untyped flow input is not known to be an array
new Flow({ slug: "f" }).map({ slug: "x" }, (item) => item);
// @ts-expect-error the map source must be the only dependency
flow.map({ slug: "x", array: "lines", dependsOn: ["load"] }, (item) => item);
const numbers = new Flow<number[]>({ slug: "numbers" }).step({ slug: "a" }, () => 1);
// @ts-expect-error a map over the flow input has no dependencies
numbers.map({ slug: "x", dependsOn: ["a"] }, (n) => n);

// Missing or unknown options.
// @ts-expect-error slug is required
new Flow<Order>({});
// @ts-expect-error slug is required
flow.step({}, () => 1);
// @ts-expect-error slug is required
flow.step({ dependsOn: ["load"] }, () => 1);
// @ts-expect-error slug is required for maps too
flow.map({ array: "lines" }, (line) => line);
// @ts-expect-error there is no queue option on steps
flow.step({ slug: "x", queue: "orders_fast" }, () => 1);
// @ts-expect-error there is no queue option on maps
flow.map({ slug: "x", array: "lines", queue: "orders_fast" }, (line) => line);
// @ts-expect-error numeric options are numbers
flow.step({ slug: "x", timeout: "60" }, () => 1);
// @ts-expect-error whenUnmet takes fail, skip or skip-cascade
flow.step({ slug: "x", if: { id: 1 }, whenUnmet: "retry" }, () => 1);

// Conditions are typed by what they test.
// @ts-expect-error a root condition tests the flow input, which has no "total"
flow.step({ slug: "x", if: { total: 1 } }, () => 1);
// @ts-expect-error status is "new" or "paid"
flow.step({ slug: "x", ifNot: { status: "shipped" } }, () => 1);
// @ts-expect-error a dependent condition tests { load: ... }, not the flow input
flow.step({ slug: "x", dependsOn: ["load"], if: { status: "paid" } }, () => 1);

// Limit options: numbers, flow-level only.
new Flow({ slug: "limited", maxInputBytes: 1000, maxOutputBytes: 2000, maxMapTasks: 50 });
// @ts-expect-error maxInputBytes is a number of bytes
new Flow({ slug: "limited", maxInputBytes: "1MB" });
// @ts-expect-error maxMapTasks is a number
new Flow({ slug: "limited", maxMapTasks: true });
// @ts-expect-error limits are flow options, not step options
flow.step({ slug: "x", maxOutputBytes: 10 }, () => 1);
