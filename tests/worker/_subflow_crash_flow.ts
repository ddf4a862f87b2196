// The flows of the subflow crash test, shared by the test and its worker subprocess so that both
// compile the same shapes: a map subflow over 50 children of a one-step child flow.
import { Flow } from "../../src/dsl/flow.ts";

/** The child: one step whose handler is the caller's. */
export function subflowCrashChild(work: (i: number) => Promise<number>) {
  return new Flow<{ i: number }>({ slug: "subflow_crash_child", timeout: 5 })
    .step({ slug: "work" }, (input) => work(input.i));
}

/** The parent: 50 elements, one child each, then their outputs in order. */
export function subflowCrashParent(child: ReturnType<typeof subflowCrashChild>) {
  return new Flow<{ count: number }>({ slug: "subflow_crash_parent", timeout: 5 })
    .step({ slug: "load" }, (input) => Array.from({ length: input.count }, (_, i) => ({ i })))
    .mapSubflow({ slug: "children", dependsOn: ["load"], flow: child, input: (deps) => deps.load })
    .step({ slug: "collect", dependsOn: ["children"] }, (deps) => deps.children.map((c) => c.work));
}
