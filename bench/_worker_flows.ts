/**
 * The flows of the worker benchmark, written with the DSL: the same two shapes as the SQL core
 * benchmark (`_sql_core_flows.ts`), with no-op handlers that return the same outputs, under their
 * own slugs so that their queues never mix with the SQL core driver's.
 *
 * @module
 */
import { type AnyFlow, Flow } from "../src/dsl/flow.ts";
import { FAN_OUT } from "./_sql_core_flows.ts";

/** A benchmarked shape as real workers run it. */
export interface WorkerWorkload {
  /** `linear3` or `map100`, as in the SQL core benchmark. */
  shape: string;
  /** The flow the workers run. */
  flow: AnyFlow;
  /** Tasks one run creates and completes. */
  tasksPerRun: number;
}

/** Called by the leaf step's handler of every run: lets the benchmark count finished runs. */
export type LeafHook = (runId: string) => void;

/** Flow options equal to the SQL core benchmark's definitions, so the SQL does the same work. */
const OPTIONS = { maxAttempts: 3, baseDelay: 1, timeout: 60 };

const SMALL_OUTPUT = { ok: true };
const FAN_OUTPUT = Array.from({ length: FAN_OUT }, (_, i) => i);

/** `a -> b -> c`, three single steps: three tasks per run. */
export function linear3(onLeaf: LeafHook): WorkerWorkload {
  const flow = new Flow<{ n: number }>({ slug: "worker_linear3", ...OPTIONS })
    .step({ slug: "a" }, () => SMALL_OUTPUT)
    .step({ slug: "b", dependsOn: ["a"] }, () => SMALL_OUTPUT)
    .step({ slug: "c", dependsOn: ["b"] }, (_deps, ctx) => {
      onLeaf(ctx.runId);
      return SMALL_OUTPUT;
    });
  return { shape: "linear3", flow, tasksPerRun: 3 };
}

/** `fan` returns 100 numbers, `each` maps over them, `sum` depends on `each`: 102 tasks per run. */
export function map100(onLeaf: LeafHook): WorkerWorkload {
  const flow = new Flow<{ n: number }>({ slug: "worker_map100", ...OPTIONS })
    .step({ slug: "fan" }, () => FAN_OUTPUT)
    .map({ slug: "each", array: "fan" }, (element) => element)
    .step({ slug: "sum", dependsOn: ["each"] }, (_deps, ctx) => {
      onLeaf(ctx.runId);
      return SMALL_OUTPUT;
    });
  return { shape: "map100", flow, tasksPerRun: FAN_OUT + 2 };
}
