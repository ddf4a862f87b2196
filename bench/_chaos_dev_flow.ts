/**
 * The chaos benchmark's development-recompile fault: one flow in two shapes. Shape A is what the
 * frozen worker subprocess (`_chaos_dev_worker.ts`) runs; shape B replaces it by a development
 * recompile while that worker is frozen, and keeps the step `s` (so a stale worker would claim it)
 * with a new step after it. Every output says which shape's handler wrote it.
 *
 * @module
 */
import { Flow } from "../src/dsl/flow.ts";

/** The flow's slug (also its worker function's name). */
export const DEV_FLOW = "chaos_dev";

/** Shape A: the old definition. */
export function devShapeA() {
  return new Flow<number>({ slug: DEV_FLOW, timeout: 10 }).step({ slug: "s" }, () => "A");
}

/** Shape B: the definition that replaces A. */
export function devShapeB() {
  return new Flow<number>({ slug: DEV_FLOW, timeout: 10 })
    .step({ slug: "s" }, () => "B")
    .step({ slug: "t", dependsOn: ["s"] }, (input) => `${input.s}+t`);
}
