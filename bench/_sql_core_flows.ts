/**
 * The flow shapes of the SQL core benchmark, written as definition JSON by hand
 * (docs/internals/contracts.md §1), and the no-op outputs their handlers return.
 *
 * @module
 */
import type postgres from "postgres";

/** One step of a definition (contracts.md §1). A type, not an interface: it must be JSON. */
type StepDefinition = {
  step_slug: string;
  step_index: number;
  step_type: "single" | "map" | "subflow";
  deps: string[];
  map_source: string | null;
  /** A subflow step's child (docs/subflows.md); absent for a handler step. */
  wait?: { subflow: { flow: string; by: "slug"; map: boolean } };
  required_input_pattern: null;
  forbidden_input_pattern: null;
  when_unmet: "skip";
  when_exhausted: "fail";
  options: { max_attempts: null; base_delay: null; timeout: null; start_delay: null };
};

/** A flow definition as `sluice.ensure_flow_compiled` takes it. */
export type FlowDefinition = {
  flow_slug: string;
  queue_mode: "flow" | "step";
  options: { max_attempts: number; base_delay: number; timeout: number; events?: boolean };
  steps: StepDefinition[];
  routes: { step_slug: string; queue_name: string }[];
};

/** A benchmarked shape: its definition and what one run of it amounts to. */
export interface Workload {
  /** Name in the results table; also the flow slug. */
  shape: string;
  /** The queue the benchmark drains: the flow's queue, or the first step's in a step-queued flow. */
  queue: string;
  /** The definition compiled before the first run. */
  definition: FlowDefinition;
  /** Tasks one run creates and completes. */
  tasksPerRun: number;
  /** The step whose completion completes the run (the only leaf). */
  leafStep: string;
  /** `supported` for `sluice.start_tasks`: every step of the flow (and of its children). */
  supported: { flow_slug: string; step_slug: string }[];
  /** The no-op handler: what a task of `stepSlug` returns for `input`. */
  output(stepSlug: string, input: postgres.JSONValue): postgres.JSONValue;
  /** Flows its subflow steps start, compiled before it (their queues are drained too). */
  children?: FlowDefinition[];
  /**
   * The wait parameters a completion of `stepSlug` carries (a subflow's child input), if any:
   * only `complete_tasks` takes them, so such a shape runs in the batched mode only.
   */
  waits?(stepSlug: string): postgres.JSONValue[] | undefined;
}

type StepSketch = Pick<StepDefinition, "step_slug" | "step_type" | "deps" | "map_source" | "wait">;

function definition(
  flowSlug: string,
  sketches: StepSketch[],
  queueMode: FlowDefinition["queue_mode"],
): FlowDefinition {
  return {
    flow_slug: flowSlug,
    queue_mode: queueMode,
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
    routes: sketches.map((s) => ({ step_slug: s.step_slug, queue_name: queueOf(s, queueMode) })),
  };

  function queueOf(step: StepSketch, mode: FlowDefinition["queue_mode"]): string {
    // Plain flows route every step to the queue named after the flow, step-queued flows each step
    // to its own (the readable name sluice.step_queue_name derives for short slugs).
    return mode === "flow"
      ? flowSlug.toLowerCase()
      : `${flowSlug}__${step.step_slug}`.toLowerCase();
  }
}

function workload(
  shape: string,
  sketches: StepSketch[],
  tasksPerRun: number,
  output: Workload["output"],
  queueMode: FlowDefinition["queue_mode"] = "flow",
): Workload {
  const flow = definition(shape, sketches, queueMode);
  return {
    shape,
    queue: flow.routes[0].queue_name,
    definition: flow,
    tasksPerRun,
    leafStep: sketches[sketches.length - 1].step_slug,
    supported: sketches.map((s) => ({ flow_slug: shape, step_slug: s.step_slug })),
    output,
  };
}

const SMALL_OUTPUT = { ok: true };

/** Width of the `map100` fan-out. */
export const FAN_OUT = 100;

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

/** `probe`: one single step; a run is one task on its own queue. */
export const PROBE: Workload = workload(
  "probe",
  [{ step_slug: "a", step_type: "single", deps: [], map_source: null }],
  1,
  () => SMALL_OUTPUT,
);

/**
 * `fan` returns `width` numbers, `each` maps over them (returning its input), `sum` depends on
 * `each`: `width + 2` tasks per run.
 */
export function mapWorkload(shape: string, width: number): Workload {
  const fanOutput = Array.from({ length: width }, (_, i) => i);
  return workload(
    shape,
    [
      { step_slug: "fan", step_type: "single", deps: [], map_source: null },
      { step_slug: "each", step_type: "map", deps: ["fan"], map_source: "fan" },
      { step_slug: "sum", step_type: "single", deps: ["each"], map_source: null },
    ],
    width + 2,
    (stepSlug, input) => {
      if (stepSlug === "fan") return fanOutput;
      if (stepSlug === "each") return input;
      return SMALL_OUTPUT;
    },
  );
}

/** `map100`: a map over 100 items, 102 tasks per run. */
export const MAP100: Workload = mapWorkload("map100", FAN_OUT);

/** Width of the `wide10` fan-out. */
export const WIDE = 10;

/**
 * `wide10`: `root`, then 10 single steps that each depend on it, then `join` on all of them: 12
 * tasks per run, the 10 in the middle released by one completion and joined by another.
 */
export const WIDE10: Workload = workload(
  "wide10",
  [
    { step_slug: "root", step_type: "single", deps: [], map_source: null },
    ...Array.from({ length: WIDE }, (_, i) => ({
      step_slug: `w${i}`,
      step_type: "single" as const,
      deps: ["root"],
      map_source: null,
    })),
    {
      step_slug: "join",
      step_type: "single",
      deps: Array.from({ length: WIDE }, (_, i) => `w${i}`),
      map_source: null,
    },
  ],
  WIDE + 2,
  () => SMALL_OUTPUT,
);

/**
 * `subflow3`: `a -> sub -> c` where `sub` is a subflow whose child flow runs one step `x`: three
 * tasks per run as in `linear3`, with the middle one in a child run. The cost of a subflow step
 * against an ordinary one (docs/subflows.md).
 */
export const SUBFLOW3: Workload = (() => {
  const child = definition("subflow3_child", [
    { step_slug: "x", step_type: "single", deps: [], map_source: null },
  ], "flow");
  const parent = workload(
    "subflow3",
    [
      { step_slug: "a", step_type: "single", deps: [], map_source: null },
      {
        step_slug: "sub",
        step_type: "subflow",
        deps: ["a"],
        map_source: null,
        wait: { subflow: { flow: "subflow3_child", by: "slug", map: false } },
      },
      { step_slug: "c", step_type: "single", deps: ["sub"], map_source: null },
    ],
    3,
    () => SMALL_OUTPUT,
  );
  return {
    ...parent,
    children: [child],
    supported: [...parent.supported, { flow_slug: "subflow3_child", step_slug: "x" }],
    waits: (stepSlug) => stepSlug === "a" ? [{ step_slug: "sub", input: { n: 1 } }] : undefined,
  };
})();

/**
 * Two independent root steps on a queue each (a step-queued flow): `slow`, whose queue the
 * benchmark drains, and `fast`, whose claim wait it probes. One `slow` task per run.
 */
export const BACKLOG: Workload = workload(
  "backlog",
  [
    { step_slug: "slow", step_type: "single", deps: [], map_source: null },
    { step_slug: "fast", step_type: "single", deps: [], map_source: null },
  ],
  1,
  () => SMALL_OUTPUT,
  "step",
);
