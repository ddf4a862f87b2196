// The flow of the waits crash test, shared by the test and its worker subprocess so that both
// compile the same shape: a signal wait between two handler steps.
import { Flow, signalPayload } from "../../src/dsl/flow.ts";

export function waitCrashFlow(after: (decision: { approved: boolean }) => Promise<string>) {
  return new Flow<{ id: string }>({ slug: "wait_crashy", timeout: 5 })
    .step({ slug: "ask" }, (input) => input.id)
    .waitForSignal({
      slug: "decision",
      dependsOn: ["ask"],
      key: (deps) => `crash:${deps.ask}`,
      payload: signalPayload<{ approved: boolean }>(),
    })
    .step({ slug: "after", dependsOn: ["decision"] }, (deps) => after(deps.decision));
}
