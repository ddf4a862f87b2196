import assert from "node:assert/strict";
import { defineDeployedFlow, Flow, FlowDefinitionError } from "../../mod.ts";
import { extractDefinition, servedStepSlugs } from "../../src/admin/mod.ts";

const child = new Flow<{ seat: string }>({ slug: "invite" })
  .step({ slug: "send" }, (input) => ({ sent: input.seat }));

const parent = new Flow<{ seats: string[] }>({ slug: "onboard" })
  .step({ slug: "load" }, (input) => input.seats)
  .subflow({ slug: "first", dependsOn: ["load"], flow: child, input: (d) => ({ seat: d.load[0] }) })
  .mapSubflow({
    slug: "all",
    dependsOn: ["load"],
    flow: defineDeployedFlow(child, { alias: "invite_current" }),
    input: (d) => d.load.map((seat) => ({ seat })),
  });

Deno.test("a subflow's definition names its child, by slug or alias, and its map form", () => {
  const definition = extractDefinition(parent);
  assert.deepEqual(
    definition.steps.map((step) => [step.step_slug, step.step_type, step.deps, step.wait]),
    [
      ["load", "single", [], null],
      ["first", "subflow", ["load"], { subflow: { flow: "invite", by: "slug", map: false } }],
      ["all", "subflow", ["load"], {
        subflow: { flow: "invite_current", by: "alias", map: true },
      }],
    ],
  );
  assert.deepEqual(servedStepSlugs(definition), ["load"]);
});

Deno.test("a subflow's bad options are refused with the offending value", () => {
  const base = new Flow({ slug: "p" }).step({ slug: "a" }, () => 1);
  const cases: [unknown, string, RegExp][] = [
    [
      { slug: "s", dependsOn: ["a"], flow: "invite", input: () => 1 },
      "flow",
      /must be a Flow or a flow returned by withStepQueues\(\) or defineDeployedFlow\(\), got "invite"/,
    ],
    [{ slug: "s", dependsOn: ["a"], flow: {}, input: () => 1 }, "flow", /must be a Flow/],
    [{ slug: "s", dependsOn: ["a"], flow: child, input: 1 }, "input", /must be a function/],
    [{ slug: "s", dependsOn: ["a"], flow: child, input: () => 1, x: 1 }, "x", /unknown option/],
    [{ slug: "s", dependsOn: [], flow: child, input: () => 1 }, "dependsOn", /exactly one/],
    [
      { slug: "s", dependsOn: ["a"], flow: new Flow({ slug: "p" }), input: () => 1 },
      "flow",
      /cannot start itself/,
    ],
  ];
  for (const [options, option, message] of cases) {
    assert.throws(
      () => base.subflow(options as never),
      (e: unknown) =>
        e instanceof FlowDefinitionError && e.option === option && message.test(e.message),
    );
  }
});
