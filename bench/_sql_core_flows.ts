/**
 * The two flow shapes of the SQL core benchmark, written as definition JSON by hand
 * (docs/internals/contracts.md §1), and the no-op outputs their handlers return.
 *
 * @module
 */
import type postgres from "postgres";

/** One step of a definition (contracts.md §1). A type, not an interface: it must be JSON. */
type StepDefinition = {
  step_slug: string;
  step_index: number;
  step_type: "single" | "map";
  deps: string[];
  map_source: string | null;
  required_input_pattern: null;
  forbidden_input_pattern: null;
  when_unmet: "skip";
  when_exhausted: "fail";
  options: { max_attempts: null; base_delay: null; timeout: null; start_delay: null };
};

/** A flow definition as `sluice.ensure_flow_compiled` takes it. */
export type FlowDefinition = {
  flow_slug: string;
  queue_mode: "flow";
  options: { max_attempts: number; base_delay: number; timeout: number };
  steps: StepDefinition[];
  routes: { step_slug: string; queue_name: string }[];
};

/** A benchmarked shape: its definition and what one run of it amounts to. */
export interface Workload {
  /** Name in the results table; also the flow slug and (lowercase) queue name. */
  shape: string;
  /** The definition compiled before the first run. */
  definition: FlowDefinition;
  /** Tasks one run creates and completes. */
  tasksPerRun: number;
  /** The step whose completion completes the run (the only leaf). */
  leafStep: string;
  /** `supported` for `sluice.start_tasks`: every step of the flow. */
  supported: { flow_slug: string; step_slug: string }[];
  /** The no-op handler: what a task of `stepSlug` returns for `input`. */
  output(stepSlug: string, input: postgres.JSONValue): postgres.JSONValue;
}

type StepSketch = Pick<StepDefinition, "step_slug" | "step_type" | "deps" | "map_source">;

function definition(flowSlug: string, sketches: StepSketch[]): FlowDefinition {
  return {
    flow_slug: flowSlug,
    queue_mode: "flow",
    options: { max_attempts: 3, base_delay: 1, timeout: 60 },
    steps: sketches.map((sketch, index) => ({
      ...sketch,
      step_index: index,
      required_input_pattern: null,
      forbidden_input_pattern: null,
      when_unmet: "skip",
      when_exhausted: "fail",
      options: { max_attempts: null, base_delay: null, timeout: null, start_delay: null },
    })),
    // Plain flows route every step to the queue named after the flow.
    routes: sketches.map((s) => ({ step_slug: s.step_slug, queue_name: flowSlug.toLowerCase() })),
  };
}

function workload(
  shape: string,
  sketches: StepSketch[],
  tasksPerRun: number,
  output: Workload["output"],
): Workload {
  return {
    shape,
    definition: definition(shape, sketches),
    tasksPerRun,
    leafStep: sketches[sketches.length - 1].step_slug,
    supported: sketches.map((s) => ({ flow_slug: shape, step_slug: s.step_slug })),
    output,
  };
}

const SMALL_OUTPUT = { ok: true };

/** Width of the `map100` fan-out. */
export const FAN_OUT = 100;

const FAN_OUTPUT = Array.from({ length: FAN_OUT }, (_, i) => i);

/** `a -> b -> c`, three single steps: three tasks per run. */
export const LINEAR3: Workload = workload(
  "linear3",
  [
    { step_slug: "a", step_type: "single", deps: [], map_source: null },
    { step_slug: "b", step_type: "single", deps: ["a"], map_source: null },
    { step_slug: "c", step_type: "single", deps: ["b"], map_source: null },
  ],
  3,
  () => SMALL_OUTPUT,
);

/**
 * `fan` returns 100 numbers, `each` maps over them (returning its input), `sum` depends on `each`:
 * 102 tasks per run.
 */
export const MAP100: Workload = workload(
  "map100",
  [
    { step_slug: "fan", step_type: "single", deps: [], map_source: null },
    { step_slug: "each", step_type: "map", deps: ["fan"], map_source: "fan" },
    { step_slug: "sum", step_type: "single", deps: ["each"], map_source: null },
  ],
  FAN_OUT + 2,
  (stepSlug, input) => {
    if (stepSlug === "fan") return FAN_OUTPUT;
    if (stepSlug === "each") return input;
    return SMALL_OUTPUT;
  },
);
