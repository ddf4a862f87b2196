// The two shapes of the recompile-fence test, shared by the test and its worker subprocess: shape A
// is one step `work`; shape B keeps `work` (same slug, so an old worker would claim it) and adds
// `extra` after it.
import { Flow } from "../../src/dsl/flow.ts";
import type { StepContext } from "../../src/dsl/context.ts";

/** Shape A: the old worker's definition. */
export function shapeA(handler: (input: unknown, ctx: StepContext) => Promise<string>) {
  return new Flow({ slug: "refenced", timeout: 30 }).step({ slug: "work" }, handler);
}

/** Shape B: the definition a development recompile replaces A with. */
export function shapeB() {
  return new Flow({ slug: "refenced", timeout: 30 })
    .step({ slug: "work" }, () => "B")
    .step({ slug: "extra", dependsOn: ["work"] }, (input) => `${input.work}+extra`);
}
