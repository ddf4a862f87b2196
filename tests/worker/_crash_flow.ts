// The flow of the crash-recovery test, shared by the test and its worker subprocess so that both
// compile the same shape.
import { Flow } from "../../src/dsl/flow.ts";
import type { StepContext } from "../../src/dsl/context.ts";

export function crashFlow(handler: (input: { n: number }, ctx: StepContext) => Promise<number>) {
  return new Flow<{ n: number }>({ slug: "crashy", timeout: 5 })
    .step({ slug: "work" }, handler);
}
