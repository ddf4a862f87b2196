// A flow's input schema (`new Flow({ slug, input })`, a Standard Schema validator): startFlow
// refuses a wrong input before anything is written, with an InputValidationError listing each
// issue's path and message, and starts a good one with the schema's value; a worker checks the
// input of a run started by name before its root step's handler runs; an `input` that is no
// Standard Schema is refused when the flow is defined; the schema is not part of the flow's shape.
// The schemas are written by hand to the specification (https://standardschema.dev), as zod,
// valibot and arktype implement it: sluice depends on none of them.
import assert from "node:assert/strict";
import {
  Flow,
  FlowDefinitionError,
  InputValidationError,
  RunFailedError,
  type StandardSchemaIssue,
  type StandardSchemaV1,
  startFlow,
  waitForRun,
} from "../../mod.ts";
import { compileFlow, extractDefinition } from "../../src/admin/mod.ts";
import { freshDatabase, type TestDatabase } from "../_db.ts";
import { testWorker, uniqueSlug } from "../worker/_helpers.ts";

type OrderIn = { orderId: number; lines: { sku: string }[]; note?: string };
type Order = { orderId: number; lines: { sku: string }[]; note: string };

/**
 * An order: `orderId` a number, `lines` an array of `{ sku: string }`; `note` defaults to "".
 * Its issues use both path forms of the specification (bare keys and `{ key }` segments), and
 * it answers asynchronously, as a schema with async refinements does.
 */
const orderSchema: StandardSchemaV1<OrderIn, Order> = {
  "~standard": {
    version: 1,
    vendor: "hand-made",
    validate(value) {
      const issues: StandardSchemaIssue[] = [];
      const order = value as Record<string, unknown> | null;
      if (typeof order !== "object" || order === null || Array.isArray(order)) {
        return Promise.resolve({ issues: [{ message: "Expected an object" }] });
      }
      if (typeof order.orderId !== "number") {
        issues.push({ message: "Expected number", path: ["orderId"] });
      }
      if (!Array.isArray(order.lines)) {
        issues.push({ message: "Expected array", path: [{ key: "lines" }] });
      } else {
        order.lines.forEach((line: { sku?: unknown } | null, index) => {
          if (typeof line?.sku !== "string") {
            issues.push({ message: "Required", path: [{ key: "lines" }, { key: index }, "sku"] });
          }
        });
      }
      if ("unit price" in order) issues.push({ message: "Unknown key", path: ["unit price"] });
      return Promise.resolve(
        issues.length > 0 ? { issues } : { value: { note: "", ...order } as Order },
      );
    },
  },
};

async function runCount(db: TestDatabase): Promise<number> {
  return (await db.sql<{ n: number }[]>`select count(*)::int as n from sluice.runs`)[0].n;
}

Deno.test("startFlow() with a flow's input schema refuses a wrong input, listing each issue, before writing anything", async () => {
  await using db = await freshDatabase();
  const flow = new Flow({ slug: uniqueSlug("orders_schema"), input: orderSchema })
    .step({ slug: "count" }, (input) => input.lines.length);
  await compileFlow(db.sql, flow);

  const error = await startFlow(db.sql, flow, {
    orderId: "7",
    lines: [{ sku: "a" }, {}],
    "unit price": 3,
  } as unknown as OrderIn).catch((e) => e);
  assert.ok(error instanceof InputValidationError, String(error));
  assert.equal(error.name, "InputValidationError");
  assert.equal(error.flowSlug, flow.slug);
  assert.deepEqual(error.issues, [
    { path: "input.orderId", message: "Expected number" },
    { path: "input.lines[1].sku", message: "Required" },
    { path: 'input["unit price"]', message: "Unknown key" },
  ]);
  assert.equal(
    error.message,
    `Cannot start flow "${flow.slug}": the input does not match the flow's input schema: ` +
      `input.orderId: Expected number; input.lines[1].sku: Required; ` +
      `input["unit price"]: Unknown key`,
  );
  const notObject = await startFlow(db.sql, flow, null as unknown as OrderIn).catch((e) => e);
  assert.deepEqual(notObject.issues, [{ path: "input", message: "Expected an object" }]);
  assert.equal(await runCount(db), 0);

  // A good input starts with the schema's value: the default filled in.
  const runId = await startFlow(db.sql, flow, { orderId: 7, lines: [{ sku: "a" }] });
  const [run] = await db.sql`select input from sluice.runs where run_id = ${runId}::uuid`;
  assert.deepEqual(run.input, { orderId: 7, lines: [{ sku: "a" }], note: "" });
});

Deno.test("a worker checks the input of a run started by name before its root step runs", async () => {
  await using db = await freshDatabase();
  const ran: unknown[] = [];
  const flow = new Flow({ slug: uniqueSlug("orders_worker"), input: orderSchema, maxAttempts: 1 })
    .step({ slug: "count" }, (input) => {
      ran.push(input);
      return input.lines.length;
    })
    .step({ slug: "report", dependsOn: ["count"] }, (deps) => `${deps.count} lines`);
  await using _worker = await testWorker(flow, db);

  // By name: no schema at hand, so the worker is the one to refuse it.
  const bad = await startFlow(db.sql, flow.slug, { orderId: 7 });
  const failed = await waitForRun(db.sql, bad, { timeoutMs: 30_000 }).catch((e) => e);
  assert.ok(failed instanceof RunFailedError, String(failed));
  assert.match(
    failed.message,
    new RegExp(
      `InputValidationError: Cannot run step "count" of flow "${flow.slug}": the input does not ` +
        `match the flow's input schema: input\\.lines: Expected array`,
    ),
  );
  assert.deepEqual(ran, [], "the handler never ran");

  // A good one reaches the handler as the schema's value.
  const good = await startFlow(db.sql, flow.slug, { orderId: 8, lines: [{ sku: "x" }] });
  assert.deepEqual(await waitForRun(db.sql, good, { timeoutMs: 30_000 }), { report: "1 lines" });
  assert.deepEqual(ran, [{ orderId: 8, lines: [{ sku: "x" }], note: "" }]);
});

Deno.test("an input that is not a Standard Schema is refused; a schema is not part of the flow's shape", () => {
  for (
    const input of [
      "orders",
      {},
      { "~standard": { version: 2, validate: () => ({ value: 1 }) } },
      { "~standard": { version: 1 } },
    ]
  ) {
    assert.throws(
      () => new Flow({ slug: "bad_schema", input: input as unknown as StandardSchemaV1 }),
      (error: unknown) =>
        error instanceof FlowDefinitionError &&
        /^Cannot create flow "bad_schema": input must be a Standard Schema validator/.test(
          error.message,
        ),
      JSON.stringify(input),
    );
  }
  const plain = new Flow<OrderIn>({ slug: "shape" }).step({ slug: "a" }, () => 1);
  const checked = new Flow({ slug: "shape", input: orderSchema }).step({ slug: "a" }, () => 1);
  assert.deepEqual(extractDefinition(checked), extractDefinition(plain));
  assert.equal(checked.inputSchema, orderSchema);
  assert.equal(plain.inputSchema, undefined);
});
