import assert from "node:assert/strict";
import { Flow, FlowDefinitionError, QueueNameError, withStepQueues } from "../../mod.ts";
import { extractDefinition, type FlowDefinition } from "../../src/admin/mod.ts";

type Line = { sku: string; qty: number; price: number };

const orderFlow = new Flow<Line[]>({ slug: "Order_Flow", maxAttempts: 5, timeout: 30 })
  .map({ slug: "reserve", maxAttempts: 2, timeout: 10 }, (line) => ({
    sku: line.sku,
    reserved: true,
  }))
  .step({ slug: "total", startDelay: 5 }, (lines) => lines.reduce((sum, l) => sum + l.price, 0))
  .step(
    {
      slug: "invoice",
      dependsOn: ["total", "reserve"],
      if: { reserve: [{ reserved: true }] },
      whenUnmet: "fail",
    },
    (deps) => ({ amount: deps.total, lines: deps.reserve.length }),
  )
  .array(
    { slug: "emails", dependsOn: ["invoice"], whenExhausted: "skip", baseDelay: 3 },
    (deps) => [`invoice ${deps.invoice.amount}`],
  )
  .map(
    {
      slug: "send",
      array: "emails",
      ifNot: { emails: ["blocked"] },
      whenUnmet: "skip-cascade",
      whenExhausted: "skip-cascade",
    },
    (email) => ({ sent: email }),
  )
  .step({ slug: "audit", dependsOn: ["total", "send"] }, (deps) => ({
    total: deps.total,
    sent: deps.send.length,
  }));

const noOptions = { max_attempts: null, base_delay: null, timeout: null, start_delay: null };

function expectedDefinition(queueMode: "flow" | "step", queues: string[]): FlowDefinition {
  const slugs = ["reserve", "total", "invoice", "emails", "send", "audit"];
  return {
    flow_slug: "Order_Flow",
    queue_mode: queueMode,
    options: {
      max_attempts: 5,
      base_delay: null,
      timeout: 30,
      events: null,
      progress_interval: null,
      max_input_bytes: null,
      max_output_bytes: null,
      max_map_tasks: null,
    },
    steps: [
      {
        step_slug: "reserve",
        step_index: 0,
        step_type: "map",
        deps: [],
        map_source: null,
        required_input_pattern: null,
        forbidden_input_pattern: null,
        when_unmet: "skip",
        when_exhausted: "fail",
        options: { max_attempts: 2, base_delay: null, timeout: 10, start_delay: null },
        wait: null,
      },
      {
        step_slug: "total",
        step_index: 1,
        step_type: "single",
        deps: [],
        map_source: null,
        required_input_pattern: null,
        forbidden_input_pattern: null,
        when_unmet: "skip",
        when_exhausted: "fail",
        options: { max_attempts: null, base_delay: null, timeout: null, start_delay: 5 },
        wait: null,
      },
      {
        step_slug: "invoice",
        step_index: 2,
        step_type: "single",
        deps: ["reserve", "total"],
        map_source: null,
        required_input_pattern: { reserve: [{ reserved: true }] },
        forbidden_input_pattern: null,
        when_unmet: "fail",
        when_exhausted: "fail",
        options: noOptions,
        wait: null,
      },
      {
        step_slug: "emails",
        step_index: 3,
        step_type: "single",
        deps: ["invoice"],
        map_source: null,
        required_input_pattern: null,
        forbidden_input_pattern: null,
        when_unmet: "skip",
        when_exhausted: "skip",
        options: { max_attempts: null, base_delay: 3, timeout: null, start_delay: null },
        wait: null,
      },
      {
        step_slug: "send",
        step_index: 4,
        step_type: "map",
        deps: ["emails"],
        map_source: "emails",
        required_input_pattern: null,
        forbidden_input_pattern: { emails: ["blocked"] },
        when_unmet: "skip-cascade",
        when_exhausted: "skip-cascade",
        options: noOptions,
        wait: null,
      },
      {
        step_slug: "audit",
        step_index: 5,
        step_type: "single",
        deps: ["send", "total"],
        map_source: null,
        required_input_pattern: null,
        forbidden_input_pattern: null,
        when_unmet: "skip",
        when_exhausted: "fail",
        options: noOptions,
        wait: null,
      },
    ],
    routes: slugs.map((step_slug, index) => ({ step_slug, queue_name: queues[index] })),
  };
}

Deno.test("extractDefinition() of a plain flow is the contract JSON, every route lower(flow_slug)", () => {
  const expected = expectedDefinition("flow", Array(6).fill("order_flow"));
  const definition = extractDefinition(orderFlow);
  assert.deepStrictEqual(definition, expected);
  assert.equal(JSON.stringify(definition), JSON.stringify(expected), "key order");
});

Deno.test("extractDefinition() of a step-queued flow has queue_mode step and generated routes", () => {
  const expected = expectedDefinition("step", [
    "order_flow__reserve",
    "order_flow__total",
    "order_flow__invoice",
    "order_flow__emails",
    "order_flow__send",
    "order_flow__audit",
  ]);
  const definition = extractDefinition(withStepQueues(orderFlow));
  assert.deepStrictEqual(definition, expected);
  assert.equal(JSON.stringify(definition), JSON.stringify(expected), "key order");
});

Deno.test("extractDefinition() returns a fresh object each call", () => {
  const first = extractDefinition(orderFlow) as unknown as {
    steps: { required_input_pattern: { reserve: unknown[] } | null; deps: string[] }[];
  };
  first.steps[2].required_input_pattern!.reserve.push("changed");
  first.steps[2].deps.push("changed");
  assert.deepStrictEqual(
    extractDefinition(orderFlow),
    expectedDefinition("flow", Array(6).fill("order_flow")),
  );
});

Deno.test("extractDefinition() cannot see handler code: flows that differ only in handlers are equal", () => {
  const a = new Flow<{ n: number }>({ slug: "calc" }).step({ slug: "f" }, (input) => input.n + 1);
  const b = new Flow<{ n: number }>({ slug: "calc" }).step({ slug: "f" }, (input) => input.n * 100);
  assert.deepStrictEqual(extractDefinition(a), extractDefinition(b));
});

Deno.test("runtime options appear only under options, apart from the shape", () => {
  const slow = new Flow({ slug: "calc", timeout: 600 }).step(
    { slug: "f", maxAttempts: 9 },
    () => 1,
  );
  const fast = new Flow({ slug: "calc" }).step({ slug: "f" }, () => 1);
  const strip = (definition: FlowDefinition) => ({
    ...definition,
    options: null,
    steps: definition.steps.map((step) => ({ ...step, options: null })),
  });
  assert.notDeepStrictEqual(extractDefinition(slow), extractDefinition(fast));
  assert.deepStrictEqual(strip(extractDefinition(slow)), strip(extractDefinition(fast)));
});

Deno.test("event options are flow runtime options, carried through every step added", () => {
  const flow = new Flow({ slug: "calc", events: false, progressInterval: 0 })
    .step({ slug: "f" }, () => 1)
    .step({ slug: "g" }, () => 2);
  const { options } = extractDefinition(flow);
  assert.deepStrictEqual(options, {
    max_attempts: null,
    base_delay: null,
    timeout: null,
    events: false,
    progress_interval: 0,
    max_input_bytes: null,
    max_output_bytes: null,
    max_map_tasks: null,
  });
});

Deno.test("limit options are flow runtime options in the definition and not part of its shape", () => {
  const limited = new Flow({
    slug: "calc",
    maxInputBytes: 1000,
    maxOutputBytes: 2000,
    maxMapTasks: 3,
  })
    .step({ slug: "f" }, () => 1);
  const plain = new Flow({ slug: "calc" }).step({ slug: "f" }, () => 1);
  const { options } = extractDefinition(limited);
  assert.equal(options.max_input_bytes, 1000);
  assert.equal(options.max_output_bytes, 2000);
  assert.equal(options.max_map_tasks, 3);
  assert.deepStrictEqual(
    { ...extractDefinition(limited), options: null },
    { ...extractDefinition(plain), options: null },
  );
  for (const key of ["maxInputBytes", "maxOutputBytes", "maxMapTasks"]) {
    assert.throws(
      () => new Flow({ slug: "calc", [key]: 0 }),
      new RegExp(`${key} must be an integer from 1 to 2147483647, got 0`),
    );
  }
});

Deno.test("extractDefinition() rejects a flow without steps", () => {
  assert.throws(() => extractDefinition(new Flow({ slug: "empty" })), (error: unknown) => {
    assert.ok(error instanceof FlowDefinitionError);
    assert.equal(
      error.message,
      'Cannot extract the definition of flow "empty": the flow has no steps',
    );
    assert.equal(error.reason, "empty_flow");
    assert.equal(error.flowSlug, "empty");
    assert.equal(error.stepSlug, undefined);
    return true;
  });
});

Deno.test("extractDefinition() rejects a plain flow whose slug is too long for a queue name", () => {
  const slug = "f".repeat(48);
  const flow = new Flow({ slug }).step({ slug: "a" }, () => 1);
  assert.throws(() => extractDefinition(flow), (error: unknown) => {
    assert.ok(error instanceof QueueNameError);
    assert.equal(
      error.message,
      `Cannot derive the queue of flow "${slug}": "${slug}" has 48 characters, more than 47`,
    );
    assert.equal(error.reason, "flow_slug_too_long");
    assert.deepStrictEqual(error.candidates, [{ name: slug, length: 48 }]);
    return true;
  });
  const fits = new Flow({ slug: "F".repeat(47) }).step({ slug: "a" }, () => 1);
  assert.equal(extractDefinition(fits).routes[0].queue_name, "f".repeat(47));
});

Deno.test("extractDefinition() rejects values that are neither a Flow nor a real wrapper", () => {
  const queued = withStepQueues(new Flow({ slug: "f" }).step({ slug: "a" }, () => 1));
  for (
    const value of [
      { ...queued },
      Object.freeze({ flow: queued.flow, queueMode: "step", routes: [] }),
      null,
    ]
  ) {
    assert.throws(() => extractDefinition(value as typeof queued), {
      name: "TypeError",
      message:
        /^Cannot resolve the routes of .*: expected a Flow or a flow returned by withStepQueues\(\) or defineDeployedFlow\(\)$/,
    });
  }
});
