import assert from "node:assert/strict";
import {
  type AnyFlow,
  Flow,
  FlowDefinitionError,
  QueueNameError,
  type QueueNameErrorDetails,
  withStepQueues,
} from "../../mod.ts";
import {
  flowQueueName,
  isStepQueuedFlow,
  MAX_QUEUE_NAME_LENGTH,
  stepQueueName,
  stepQueueNames,
} from "../../src/admin/mod.ts";

/** Expects `fn` to throw a QueueNameError with exactly these fields. */
function assertQueueNameError(
  fn: () => unknown,
  expected: Omit<QueueNameErrorDetails, "maxLength"> & { message: string },
): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof QueueNameError, `expected QueueNameError, got ${error}`);
    assert.equal(error.name, "QueueNameError");
    assert.deepStrictEqual(
      {
        message: error.message,
        flowSlug: error.flowSlug,
        reason: error.reason,
        stepSlugs: error.stepSlugs,
        candidates: error.candidates,
      },
      expected,
    );
    assert.equal(error.maxLength, 47);
    return true;
  });
}

/** A flow with the given step slugs, each a root step. */
function flowWith(flowSlug: string, stepSlugs: string[]): AnyFlow {
  let flow: AnyFlow = new Flow({ slug: flowSlug });
  for (const slug of stepSlugs) flow = flow.step({ slug }, () => 1);
  return flow;
}

const f44 = "f".repeat(44);

const names: [string, string, string, number, string][] = [
  ["a short name", "orders", "fetch", 0, "orders__fetch"],
  ["an uppercase name, lowercased", "Orders", "FetchItems", 3, "orders__fetchitems"],
  ["exactly 47 characters", "orders", "s".repeat(39), 1, `orders__${"s".repeat(39)}`],
  ["48 characters: the index fallback", "orders", "s".repeat(40), 1, "orders__1"],
  ["a fallback of exactly 47 characters", f44, "step", 9, `${f44}__9`],
  [
    "the largest index that still fits",
    "f".repeat(36),
    "s".repeat(10),
    999999999,
    `${"f".repeat(36)}__999999999`,
  ],
];

for (const [what, flowSlug, stepSlug, index, expected] of names) {
  Deno.test(`stepQueueName() gives ${what}`, () => {
    const name = stepQueueName(flowSlug, stepSlug, index);
    assert.equal(name, expected);
    assert.ok(name.length <= MAX_QUEUE_NAME_LENGTH);
  });
}

Deno.test("stepQueueName() rejects a step whose readable and fallback names both exceed 47", () => {
  assertQueueNameError(() => stepQueueName(f44, "longer", 10), {
    message:
      `Cannot derive the queue of step "longer" of flow "${f44}": "${f44}__longer" (52 characters) and the fallback "${f44}__10" (48 characters) both exceed 47 characters`,
    flowSlug: f44,
    reason: "name_too_long",
    stepSlugs: ["longer"],
    candidates: [{ name: `${f44}__longer`, length: 52 }, { name: `${f44}__10`, length: 48 }],
  });
});

Deno.test("stepQueueName() rejects a step index that is not a non-negative integer", () => {
  for (const index of [-1, 1.5, Number.NaN]) {
    assert.throws(() => stepQueueName("f", "s", index), {
      name: "RangeError",
      message:
        `Cannot derive the queue of step "s" of flow "f": stepIndex must be a non-negative integer, got ${index}`,
    });
  }
});

Deno.test("MAX_QUEUE_NAME_LENGTH is 47 and flowQueueName() lowercases the flow slug", () => {
  assert.equal(MAX_QUEUE_NAME_LENGTH, 47);
  assert.equal(flowQueueName("Order_Flow"), "order_flow");
});

Deno.test("withStepQueues() routes each step to its generated queue, in step order", () => {
  const long = "s".repeat(40);
  const flow = flowWith("Orders", ["Fetch", long, "s".repeat(39)]);
  const queued = withStepQueues(flow);
  assert.equal(queued.flow, flow);
  assert.equal(queued.queueMode, "step");
  assert.deepStrictEqual(queued.routes, [
    { stepSlug: "Fetch", queueName: "orders__fetch" },
    { stepSlug: long, queueName: "orders__1" },
    { stepSlug: "s".repeat(39), queueName: `orders__${"s".repeat(39)}` },
  ]);
  assert.ok(Object.isFrozen(queued));
  assert.ok(Object.isFrozen(queued.routes));
  assert.ok(queued.routes.every((route) => Object.isFrozen(route)));
});

Deno.test("withStepQueues() rejects a flow without steps", () => {
  assertQueueNameError(() => withStepQueues(new Flow({ slug: "empty" })), {
    message: 'Cannot derive the step queues of flow "empty": the flow has no steps',
    flowSlug: "empty",
    reason: "empty_flow",
    stepSlugs: [],
    candidates: [],
  });
});

Deno.test("withStepQueues() rejects a flow slug too long even for <flow>__0", () => {
  const slug = "f".repeat(45);
  assertQueueNameError(() => withStepQueues(flowWith(slug, ["a"])), {
    message:
      `Cannot derive the step queues of flow "${slug}": even the shortest name "${slug}__0" has 48 characters, more than 47 (use a flow slug of at most 44 characters)`,
    flowSlug: slug,
    reason: "flow_slug_too_long",
    stepSlugs: [],
    candidates: [{ name: `${slug}__0`, length: 48 }],
  });
  assert.equal(withStepQueues(flowWith(f44, ["a"])).routes[0].queueName, `${f44}__a`);
  assert.equal(withStepQueues(flowWith(f44, ["ab"])).routes[0].queueName, `${f44}__0`);
});

Deno.test("withStepQueues() rejects a step whose readable and fallback names both exceed 47", () => {
  const slugs = ["a", "b", "c", "d", "e", "g", "h", "i", "j", "k", "longer"];
  assertQueueNameError(() => withStepQueues(flowWith(f44, slugs)), {
    message:
      `Cannot derive the queue of step "longer" of flow "${f44}": "${f44}__longer" (52 characters) and the fallback "${f44}__10" (48 characters) both exceed 47 characters`,
    flowSlug: f44,
    reason: "name_too_long",
    stepSlugs: ["longer"],
    candidates: [{ name: `${f44}__longer`, length: 52 }, { name: `${f44}__10`, length: 48 }],
  });
});

Deno.test("stepQueueNames() rejects two steps that resolve to one queue", () => {
  assertQueueNameError(() => stepQueueNames("orders", ["fetch", "Ship", "ship"]), {
    message:
      'Cannot derive the step queues of flow "orders": steps "Ship" and "ship" both resolve to queue "orders__ship"',
    flowSlug: "orders",
    reason: "collision",
    stepSlugs: ["Ship", "ship"],
    candidates: [{ name: "orders__ship", length: 12 }],
  });
  assert.deepStrictEqual(stepQueueNames("orders", ["fetch", "ship"]), [
    "orders__fetch",
    "orders__ship",
  ]);
});

Deno.test("only withStepQueues() makes a step-queued flow: copies and look-alikes are rejected", () => {
  const flow = flowWith("orders", ["a"]);
  const queued = withStepQueues(flow);
  assert.ok(isStepQueuedFlow(queued));
  assert.ok(isStepQueuedFlow(withStepQueues(flow)));
  const lookAlikes: unknown[] = [
    { ...queued },
    Object.freeze({ flow, queueMode: "step", routes: queued.routes }),
    Object.create(queued),
    structuredClone({ queueMode: queued.queueMode, routes: queued.routes }),
    flow,
    null,
    "orders",
  ];
  for (const value of lookAlikes) assert.equal(isStepQueuedFlow(value), false);
});

Deno.test("withStepQueues() accepts only a Flow", () => {
  const queued = withStepQueues(flowWith("orders", ["a"]));
  for (const value of [queued, { slug: "orders", steps: [] }, null]) {
    assert.throws(() => withStepQueues(value as never), {
      name: "TypeError",
      message: /^Cannot add step queues to .*: expected a Flow$/,
    });
  }
});

Deno.test("withStepQueues(flow, { functions }) maps listed steps to their co-hosting function and the others to their own", () => {
  const flow = new Flow({ slug: "Invoice_Send" })
    .step({ slug: "render_pdf" }, () => 1)
    .step({ slug: "email_invoice" }, () => 2)
    .step({ slug: "mark_sent" }, () => 3);
  const queued = withStepQueues(flow, {
    functions: { email_invoice: "office-interactive", mark_sent: "office-interactive" },
  });
  assert.deepEqual(queued.functions, {
    render_pdf: "invoice-send--render-pdf",
    email_invoice: "office-interactive",
    mark_sent: "office-interactive",
  });
  assert.ok(Object.isFrozen(queued.functions));
  // Queues are unchanged: co-hosting never shares a queue.
  assert.deepEqual(queued.routes.map((route) => route.queueName), [
    "invoice_send__render_pdf",
    "invoice_send__email_invoice",
    "invoice_send__mark_sent",
  ]);
  assert.deepEqual(withStepQueues(flow).functions, {
    render_pdf: "invoice-send--render-pdf",
    email_invoice: "invoice-send--email-invoice",
    mark_sent: "invoice-send--mark-sent",
  });
});

Deno.test("withStepQueues(flow, { functions }) refuses an unknown step slug and a bad function name, naming them", () => {
  const flow = new Flow({ slug: "orders" }).step({ slug: "charge" }, () => 1)
    .step({ slug: "ship" }, () => 2);
  const refuses = (functions: unknown, value: unknown, message: RegExp) =>
    assert.throws(
      () => withStepQueues(flow, { functions } as never),
      (error: unknown) => {
        assert.ok(error instanceof FlowDefinitionError, String(error));
        assert.equal(error.name, "FlowDefinitionError");
        assert.deepEqual([error.reason, error.option, error.value], [
          "invalid_option",
          "functions",
          value,
        ]);
        assert.match(error.message, message);
        return true;
      },
    );
  refuses(
    { chrage: "orders-light" },
    "chrage",
    /functions names the step "chrage", which the flow does not have \(its steps: "charge", "ship"\)/,
  );
  for (const name of ["Orders", "orders--light", "orders-", "1orders", "", "a".repeat(65), 7]) {
    refuses(
      { ship: name },
      name,
      /the function of step "ship" must be lowercase letters and digits in words joined by single "-"/,
    );
  }
  refuses(["charge"], ["charge"], /functions must be an object mapping step slugs/);
});
