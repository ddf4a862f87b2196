import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, withStepQueues } from "../../mod.ts";
import { CodegenError, type CodegenErrorReason } from "../../src/codegen/errors.ts";
import { planWorkerFunctions } from "../../src/codegen/plan.ts";

const plain = new Flow({ slug: "greet_user" })
  .step({ slug: "compose" }, () => "hi")
  .step({ slug: "record", dependsOn: ["compose"] }, () => 1);
const inner = new Flow({ slug: "Thread_Digest" })
  .step({ slug: "fetch_posts" }, () => [1])
  .step({ slug: "classify", dependsOn: ["fetch_posts"] }, () => 2);
const queued = withStepQueues(inner);

function assertCodegenError(
  fn: () => unknown,
  expected: { reason: CodegenErrorReason; flowSlug?: string; exportNames: string[] },
  message: RegExp,
): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof CodegenError, `expected a CodegenError, got ${error}`);
    assert.equal(error.name, "CodegenError");
    assert.deepEqual(
      { reason: error.reason, flowSlug: error.flowSlug, exportNames: error.exportNames },
      { flowSlug: undefined, ...expected },
    );
    assert.equal(error.path, "flows.ts");
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("planWorkerFunctions() plans one function per plain flow and one per step of a step-queued flow", () => {
  assert.deepEqual(planWorkerFunctions({ greetUser: plain, digest: queued }, "flows.ts"), [
    {
      functionName: "greet-user",
      exportName: "greetUser",
      flowSlug: "greet_user",
      stepSlug: null,
      queueName: "greet_user",
      queueMode: "flow",
      alias: null,
      cohosted: false,
    },
    {
      functionName: "thread-digest--classify",
      exportName: "digest",
      flowSlug: "Thread_Digest",
      stepSlug: "classify",
      queueName: "thread_digest__classify",
      queueMode: "step",
      alias: null,
      cohosted: false,
    },
    {
      functionName: "thread-digest--fetch-posts",
      exportName: "digest",
      flowSlug: "Thread_Digest",
      stepSlug: "fetch_posts",
      queueName: "thread_digest__fetch_posts",
      queueMode: "step",
      alias: null,
      cohosted: false,
    },
  ]);
});

Deno.test("planWorkerFunctions() plans no function for the wait steps of a step-queued flow", () => {
  const waiting = withStepQueues(
    new Flow<{ id: string }>({ slug: "approvals" })
      .step({ slug: "ask" }, (input) => input.id)
      .waitForSignal({ slug: "decision", dependsOn: ["ask"], key: (deps) => deps.ask })
      .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 60 }))
      .step({ slug: "settle", dependsOn: ["decision", "pause"] }, () => true),
  );
  assert.deepEqual(
    planWorkerFunctions({ waiting }, "flows.ts").map((spec) => spec.stepSlug),
    ["ask", "settle"],
  );
  // A plain flow with waits is still one function.
  assert.deepEqual(
    planWorkerFunctions({ plainWaits: waiting.flow }, "flows.ts").map((s) => s.functionName),
    ["approvals"],
  );
});

Deno.test("planWorkerFunctions() ignores other exports and counts a flow exported twice once, preferring a named export", () => {
  const specs = planWorkerFunctions(
    { default: plain, zGreet: plain, aGreet: plain, helper: () => 1, version: 2 },
    "flows.ts",
  );
  assert.deepEqual(specs.map((spec) => [spec.functionName, spec.exportName]), [
    ["greet-user", "aGreet"],
  ]);
  assert.equal(planWorkerFunctions({ default: plain }, "flows.ts")[0].exportName, "default");
});

Deno.test("planWorkerFunctions() ignores a look-alike of a step-queued flow", () => {
  const specs = planWorkerFunctions({ real: plain, fake: { ...queued } }, "flows.ts");
  assert.deepEqual(specs.map((spec) => spec.functionName), ["greet-user"]);
});

Deno.test("planWorkerFunctions() rejects a module without flows", () => {
  assertCodegenError(
    () => planWorkerFunctions({ helper: () => 1, fake: { ...queued } }, "flows.ts"),
    { reason: "no_flows", exportNames: [] },
    /^Cannot generate worker functions: "flows.ts" exports no Flow/,
  );
});

Deno.test("planWorkerFunctions() rejects a flow without steps", () => {
  assertCodegenError(
    () => planWorkerFunctions({ draft: new Flow({ slug: "draft" }), greetUser: plain }, "flows.ts"),
    { reason: "empty_flow", flowSlug: "draft", exportNames: ["draft"] },
    /flow "draft" \(export draft of "flows.ts"\) has no steps/,
  );
});

Deno.test("planWorkerFunctions() rejects two exports of one slug, compared case-insensitively", () => {
  const other = new Flow({ slug: "GREET_USER" }).step({ slug: "compose" }, () => "hey");
  assertCodegenError(
    () => planWorkerFunctions({ greetUser: plain, greetLoud: other }, "flows.ts"),
    { reason: "duplicate_flow", flowSlug: "greet_user", exportNames: ["greetLoud", "greetUser"] },
    /exports greetLoud and greetUser of "flows.ts" are both flow "greet_user"/,
  );
});

Deno.test("planWorkerFunctions() rejects a flow exported both plain and step-queued", () => {
  assertCodegenError(
    () => planWorkerFunctions({ inner, queued }, "flows.ts"),
    { reason: "duplicate_flow", flowSlug: "Thread_Digest", exportNames: ["inner", "queued"] },
    /a concrete flow has one shape and one queue mode/,
  );
});

Deno.test("planWorkerFunctions() plans a deployed flow as the flow it wraps, once, with its alias", () => {
  const digest = defineDeployedFlow(queued, { alias: "digest" });
  const specs = planWorkerFunctions({ queued, digest, greet: plain }, "flows.ts");
  assert.deepEqual(specs.map((spec) => [spec.functionName, spec.exportName, spec.alias]), [
    ["greet-user", "greet", null],
    ["thread-digest--classify", "digest", "digest"],
    ["thread-digest--fetch-posts", "digest", "digest"],
  ]);
  // A look-alike of a deployed flow is not a flow.
  assert.deepEqual(
    planWorkerFunctions({ greet: plain, fake: { ...digest } }, "flows.ts").map((s) => s.alias),
    [null],
  );
});

Deno.test("planWorkerFunctions() rejects one concrete flow deployed under two aliases", () => {
  assertCodegenError(
    () =>
      planWorkerFunctions({
        digest: defineDeployedFlow(queued, { alias: "digest" }),
        threads: defineDeployedFlow(queued, { alias: "threads" }),
      }, "flows.ts"),
    { reason: "duplicate_flow", flowSlug: "Thread_Digest", exportNames: ["digest", "threads"] },
    /exports digest and threads of "flows.ts" deploy flow "Thread_Digest" under the aliases "digest", "threads"; export one deployment per concrete flow$/,
  );
});

Deno.test("planWorkerFunctions() puts co-hosted steps of several flows under one function name, one spec per worker", () => {
  const light = withStepQueues(inner, { functions: { classify: "digest-light" } });
  const other = withStepQueues(
    new Flow({ slug: "mail" }).step({ slug: "send" }, () => 1),
    { functions: { send: "digest-light" } },
  );
  const specs = planWorkerFunctions({ light, other, greetUser: plain }, "flows.ts");
  assert.deepEqual(specs.map((spec) => [spec.functionName, spec.stepSlug, spec.cohosted]), [
    ["digest-light", "classify", true],
    ["digest-light", "send", true],
    ["greet-user", null, false],
    ["thread-digest--fetch-posts", "fetch_posts", false],
  ]);
});

Deno.test("planWorkerFunctions() refuses a co-hosting function named like a plain flow's function", () => {
  const taken = withStepQueues(inner, { functions: { classify: "greet-user" } });
  assertCodegenError(
    () => planWorkerFunctions({ taken, greetUser: plain }, "flows.ts"),
    { reason: "invalid_name", flowSlug: "Thread_Digest", exportNames: ["greetUser", "taken"] },
    /co-hosts step "classify" in function "greet-user", which is the function of plain flow "greet_user"/,
  );
});
