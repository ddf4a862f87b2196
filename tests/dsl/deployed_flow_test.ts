// defineDeployedFlow(): the alias checked as a slug, the registered routing and alias, and the
// wrappers it refuses.
import assert from "node:assert/strict";
import { extractDefinition } from "../../src/dsl/definition.ts";
import { aliasOf, defineDeployedFlow, isDeployedFlow } from "../../src/dsl/deployed_flow.ts";
import { FlowDefinitionError } from "../../src/dsl/errors.ts";
import { Flow } from "../../src/dsl/flow.ts";
import { isStepQueuedFlow, withStepQueues } from "../../src/dsl/step_queues.ts";
import { StepSlugError } from "../../src/worker/mod.ts";
import { resolveWorkerTarget } from "../../src/admin/mod.ts";

const ordersV2 = new Flow<{ id: number }>({ slug: "orders_v2" })
  .step({ slug: "charge" }, (input) => input.id)
  .step({ slug: "ship", dependsOn: ["charge"] }, (deps) => deps.charge);

Deno.test("defineDeployedFlow() wraps a flow in a frozen, registered deployed flow", () => {
  const orders = defineDeployedFlow(ordersV2, { alias: "orders" });
  assert.ok(Object.isFrozen(orders));
  assert.equal(orders.flow, ordersV2);
  assert.equal(orders.alias, "orders");
  assert.ok(isDeployedFlow(orders));
  assert.equal(aliasOf(orders), "orders");
  // A copy or a look-alike is not trusted, and concrete flows have no alias of their own here.
  assert.equal(isDeployedFlow({ ...orders }), false);
  assert.equal(aliasOf({ flow: ordersV2, alias: "orders" }), undefined);
  assert.equal(aliasOf(ordersV2), undefined);
  assert.equal(isDeployedFlow(ordersV2), false);
  // Its definition is the concrete flow's: the alias never reaches queues or the compiled shape.
  assert.deepEqual(extractDefinition(orders), extractDefinition(ordersV2));
  assert.throws(() => extractDefinition({ ...orders } as never), TypeError);
});

Deno.test("a deployed step-queued flow keeps its step queues and is not itself a StepQueuedFlow", () => {
  const queued = withStepQueues(ordersV2);
  const orders = defineDeployedFlow(queued, { alias: "orders" });
  assert.equal(orders.flow, queued);
  assert.equal(isStepQueuedFlow(orders), false);
  assert.ok(isStepQueuedFlow(queued));
  assert.deepEqual(extractDefinition(orders), extractDefinition(queued));
  assert.deepEqual(
    extractDefinition(orders).routes.map((route) => route.queue_name),
    ["orders_v2__charge", "orders_v2__ship"],
  );
});

Deno.test("defineDeployedFlow() checks the alias as a slug and names the offending value", () => {
  for (
    const [alias, detail] of [
      ["orders-v2", "a slug may only contain letters, digits and underscores"],
      ["2orders", "a slug must start with a letter"],
      ["orders__x", 'a slug must not contain "__"'],
      ["orders_", 'a slug must not end with "_"'],
      ["", "a slug must start with a letter"],
    ]
  ) {
    assert.throws(() => defineDeployedFlow(ordersV2, { alias }), (error: unknown) => {
      assert.ok(error instanceof FlowDefinitionError);
      assert.equal(error.reason, "invalid_slug");
      assert.equal(error.option, "alias");
      assert.equal(error.value, alias);
      assert.equal(error.flowSlug, "orders_v2");
      assert.equal(
        error.message,
        `Cannot deploy flow "orders_v2" as alias ${JSON.stringify(alias)}: ${detail}`,
      );
      return true;
    });
  }
  assert.throws(
    () => defineDeployedFlow(ordersV2, { alias: 7 as unknown as string }),
    /^FlowDefinitionError: Cannot deploy flow "orders_v2" as alias 7: a slug must be a string, got number$/,
  );
  assert.throws(
    // @ts-expect-error options { alias } are required
    () => defineDeployedFlow(ordersV2),
    /^TypeError: Cannot deploy flow "orders_v2": options \{ alias \} are required, got undefined$/,
  );
});

Deno.test("defineDeployedFlow() refuses a deployed flow, a look-alike; withStepQueues() refuses a deployed flow", () => {
  const orders = defineDeployedFlow(ordersV2, { alias: "orders" });
  assert.throws(
    // @ts-expect-error a deployed flow cannot be deployed again
    () => defineDeployedFlow(orders, { alias: "orders_again" }),
    /^TypeError: Cannot deploy a deployed flow: it is already deployed as alias "orders"; pass the concrete flow \(deployed\.flow\) to defineDeployedFlow\(\)$/,
  );
  assert.throws(
    // @ts-expect-error a look-alike is not a flow
    () => defineDeployedFlow({ slug: "orders_v2", steps: [] }, { alias: "orders" }),
    /^TypeError: Cannot deploy \{"slug":"orders_v2","steps":\[\]\}: expected a Flow or a flow returned by withStepQueues\(\)$/,
  );
  assert.throws(
    // @ts-expect-error step queues go on the concrete flow
    () => withStepQueues(orders),
    /^TypeError: Cannot add step queues to the deployed flow "orders_v2" \(alias "orders"\): add them to the concrete flow first, defineDeployedFlow\(withStepQueues\(flow\), \{ alias \}\)$/,
  );
});

Deno.test("resolveWorkerTarget() of a deployed flow is the wrapped flow's, with the alias and activate mode", () => {
  const plain = defineDeployedFlow(ordersV2, { alias: "orders" });
  assert.deepEqual(resolveWorkerTarget(plain), {
    ...resolveWorkerTarget(ordersV2),
    alias: "orders",
    activate: "manual",
  });
  assert.equal(resolveWorkerTarget(plain, { activate: "on-startup" }).activate, "on-startup");
  assert.equal(resolveWorkerTarget(ordersV2).alias, null);
  assert.equal(resolveWorkerTarget(ordersV2).activate, null);

  const queued = defineDeployedFlow(withStepQueues(ordersV2), { alias: "orders" });
  const target = resolveWorkerTarget(queued, { stepSlug: "ship", activate: "on-startup" });
  assert.equal(target.queueName, "orders_v2__ship");
  assert.equal(target.functionName, "orders-v2--ship");
  assert.equal(target.alias, "orders");
  assert.throws(
    // @ts-expect-error a deployed step-queued flow's worker needs a stepSlug
    () => resolveWorkerTarget(queued, {}),
    (error: unknown) => error instanceof StepSlugError && error.reason === "missing",
  );
  assert.throws(
    // @ts-expect-error a deployed plain flow's worker takes no stepSlug
    () => resolveWorkerTarget(plain, { stepSlug: "ship" }),
    (error: unknown) => error instanceof StepSlugError && error.reason === "not_step_queued",
  );
});

Deno.test("activate is checked: only for a deployed flow, only on-startup or manual", () => {
  const plain = defineDeployedFlow(ordersV2, { alias: "orders" });
  assert.throws(
    // @ts-expect-error not an activation mode
    () => resolveWorkerTarget(plain, { activate: "always" }),
    /^TypeError: Cannot start worker for flow "orders_v2" \(alias "orders"\): activate must be "on-startup" or "manual", got "always"$/,
  );
  assert.throws(
    // @ts-expect-error only a deployed flow's worker activates an alias
    () => resolveWorkerTarget(ordersV2, { activate: "on-startup" }),
    /^TypeError: Cannot start worker for flow "orders_v2": activate "on-startup" is only for a deployed flow's worker \(the alias to activate comes from defineDeployedFlow\(flow, \{ alias \}\)\); remove activate$/,
  );
});
