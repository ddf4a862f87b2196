import assert from "node:assert/strict";
import { Flow, type StepContext } from "../../mod.ts";

Deno.test("new Flow() keeps the slug and the flow options as given", () => {
  const flow = new Flow({ slug: "orders", maxAttempts: 5, timeout: 120 });
  assert.equal(flow.slug, "orders");
  assert.deepEqual(flow.options, { maxAttempts: 5, timeout: 120 });
  assert.deepEqual(flow.steps, []);
});

Deno.test("every builder returns a new flow and leaves the receiver unchanged", () => {
  const empty = new Flow<{ items: string[] }>({ slug: "f" });
  const one = empty.step({ slug: "a" }, (input) => input.items);
  const two = one.array({ slug: "b" }, (input) => input.items);
  const three = two.map({ slug: "c", array: "b" }, (item) => item.length);
  const branch = one.step({ slug: "x" }, () => null);

  assert.notEqual(one, empty);
  assert.deepEqual(empty.steps, []);
  assert.deepEqual(one.steps.map((step) => step.slug), ["a"]);
  assert.deepEqual(two.steps.map((step) => step.slug), ["a", "b"]);
  assert.deepEqual(three.steps.map((step) => step.slug), ["a", "b", "c"]);
  assert.deepEqual(branch.steps.map((step) => step.slug), ["a", "x"]);
  assert.equal(three.steps[0], one.steps[0]);
});

Deno.test("flows, their steps and step details are frozen", () => {
  const flow = new Flow({ slug: "f", maxAttempts: 2 })
    .step({ slug: "a", if: { nested: { list: [1] } }, timeout: 5 }, () => 1)
    .step({ slug: "b", dependsOn: ["a"] }, () => 2);
  assert.ok(Object.isFrozen(flow));
  assert.ok(Object.isFrozen(flow.options));
  assert.ok(Object.isFrozen(flow.steps));
  for (const step of flow.steps) {
    assert.ok(Object.isFrozen(step));
    assert.ok(Object.isFrozen(step.dependsOn));
    assert.ok(Object.isFrozen(step.options));
  }
  const pattern = flow.steps[0].if as { nested: { list: number[] } };
  assert.ok(Object.isFrozen(pattern));
  assert.ok(Object.isFrozen(pattern.nested));
  assert.ok(Object.isFrozen(pattern.nested.list));
  assert.throws(() => {
    (flow as unknown as { slug: string }).slug = "g";
  }, TypeError);
  assert.throws(() => {
    (flow.steps as unknown as unknown[]).push(flow.steps[0]);
  }, TypeError);
});

Deno.test("a step keeps a copy of its condition, so later changes to the object do not leak in", () => {
  const condition = { status: "paid" };
  const flow = new Flow({ slug: "f" }).step({ slug: "a", if: condition }, () => 1);
  condition.status = "new";
  assert.deepEqual(flow.steps[0].if, { status: "paid" });
});

Deno.test("step definitions record index, type, sorted deps, map source, policies and options", () => {
  const handler = () => 1;
  const flow = new Flow<number[]>({ slug: "f" })
    .map({ slug: "each" }, (n) => n * 2)
    .step({ slug: "z" }, () => ["z"])
    .step({ slug: "b", dependsOn: ["z", "each"], whenUnmet: "fail", startDelay: 0 }, handler)
    .map({ slug: "per_z", array: "z", whenExhausted: "skip-cascade" }, (item) => item);

  assert.deepEqual(
    flow.steps.map(({ handler: _, ...rest }) => rest),
    [
      {
        slug: "each",
        index: 0,
        type: "map",
        dependsOn: [],
        mapSource: null,
        if: null,
        ifNot: null,
        whenUnmet: "skip",
        whenExhausted: "fail",
        wait: null,
        options: {},
      },
      {
        slug: "z",
        index: 1,
        type: "single",
        dependsOn: [],
        mapSource: null,
        if: null,
        ifNot: null,
        whenUnmet: "skip",
        whenExhausted: "fail",
        wait: null,
        options: {},
      },
      {
        slug: "b",
        index: 2,
        type: "single",
        dependsOn: ["each", "z"],
        mapSource: null,
        if: null,
        ifNot: null,
        whenUnmet: "fail",
        whenExhausted: "fail",
        wait: null,
        options: { startDelay: 0 },
      },
      {
        slug: "per_z",
        index: 3,
        type: "map",
        dependsOn: ["z"],
        mapSource: "z",
        if: null,
        ifNot: null,
        whenUnmet: "skip",
        whenExhausted: "skip-cascade",
        wait: null,
        options: {},
      },
    ],
  );
  assert.equal(flow.getStep("b").handler, handler);
});

Deno.test("getStep() returns the step and throws RangeError for an unknown slug", () => {
  const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1).step({ slug: "b" }, () => 2);
  assert.equal(flow.getStep("b").index, 1);
  assert.throws(() => flow.getStep("c" as "a"), {
    name: "RangeError",
    message: 'Cannot get step "c" of flow "f": no such step (steps: a, b)',
  });
});

Deno.test("stored handlers are the ones given, called with input and context", async () => {
  const flow = new Flow<{ n: number }>({ slug: "f" })
    .step({ slug: "double" }, async (input) => await Promise.resolve(input.n * 2));
  const result = await flow.getStep("double").handler({ n: 21 }, {} as StepContext);
  assert.equal(result, 42);
});
