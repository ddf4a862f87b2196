/**
 * Utility types that read a flow's input, outputs and step slugs. Each accepts a plain `Flow`, a
 * `StepQueuedFlow` or a `DeployedFlow` of either.
 *
 * @module
 */

import type { AnyFlow, Flow } from "./flow.ts";
import type { StepOutputs, StepSignatures } from "./signature.ts";
import type { StepQueuedFlow } from "./step_queues.ts";
import type { DeployedFlow } from "./deployed_flow.ts";

/**
 * A flow in any queue mode: a plain `Flow` or a wrapper around one (step queues, an alias).
 *
 * @example Usage
 * ```ts
 * import { type DeployableFlow, defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1);
 * const deployable: DeployableFlow[] = [
 *   flow,
 *   withStepQueues(flow),
 *   defineDeployedFlow(flow, { alias: "g" }),
 * ];
 * ```
 */
export type DeployableFlow = AnyFlow | StepQueuedFlow | DeployedFlow;

/**
 * The plain flow inside a deployable flow.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type PlainFlow, withStepQueues } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1);
 * const queued = withStepQueues(flow);
 * const plain: PlainFlow<typeof queued> = queued.flow;
 * ```
 */
export type PlainFlow<F extends DeployableFlow> = F extends DeployedFlow<infer Wrapped>
  ? Wrapped extends StepQueuedFlow<infer Inner> ? Inner : Wrapped
  : F extends StepQueuedFlow<infer Inner> ? Inner
  : F;

/**
 * The step signatures of a flow, keyed by step slug.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type FlowSteps } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1);
 * const skippable: FlowSteps<typeof flow>["a"]["skippable"] = false;
 * ```
 */
export type FlowSteps<F extends DeployableFlow> = PlainFlow<F> extends Flow<unknown, infer Steps>
  ? Steps
  : never;

/**
 * The slugs of a flow's leaf steps: those no other step depends on.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type LeafStepSlug } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "f" })
 *   .step({ slug: "a" }, () => 1)
 *   .step({ slug: "b", dependsOn: ["a"] }, () => 2);
 * const leaf: LeafStepSlug<typeof flow> = "b";
 * ```
 */
export type LeafStepSlug<F extends DeployableFlow> = Exclude<
  keyof FlowSteps<F>,
  FlowSteps<F>[keyof FlowSteps<F>]["deps"]
>;

/**
 * The input type of a flow: what a start of it takes (with an input schema, the schema's input
 * type; its steps receive the schema's output type).
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type FlowInput } from "@sluice/sluice";
 *
 * const flow = new Flow<{ url: string }>({ slug: "scrape" });
 * const input: FlowInput<typeof flow> = { url: "https://example.com" };
 * ```
 */
export type FlowInput<F extends DeployableFlow> = PlainFlow<F> extends
  Flow<unknown, StepSignatures, infer StartInput> ? StartInput
  : never;

/**
 * The output type of a run: an object keyed by the flow's leaf steps (steps no other step
 * depends on) holding their outputs; leaves that may be skipped are optional keys.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type FlowOutput } from "@sluice/sluice";
 *
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2)
 *   .step({ slug: "label", dependsOn: ["double"] }, (deps) => `n*2=${deps.double}`);
 * const output: FlowOutput<typeof flow> = { label: "n*2=4" };
 * ```
 */
export type FlowOutput<F extends DeployableFlow> = StepOutputs<FlowSteps<F>, LeafStepSlug<F>>;

/**
 * The union of a flow's step slugs.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type StepSlug } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1).step({ slug: "b" }, () => 2);
 * const slug: StepSlug<typeof flow> = "b"; // "a" | "b"
 * ```
 */
export type StepSlug<F extends DeployableFlow> = keyof FlowSteps<F> & string;

/**
 * What a step's handler receives: the flow input for a root step, an object of dependency outputs
 * for a dependent step, one element for a map step.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 * @typeParam S A step slug of `F`.
 *
 * @example Usage
 * ```ts
 * import { Flow, type StepInput } from "@sluice/sluice";
 *
 * const flow = new Flow<string[]>({ slug: "f" }).map({ slug: "len" }, (item) => item.length);
 * const input: StepInput<typeof flow, "len"> = "one element";
 * ```
 */
export type StepInput<F extends DeployableFlow, S extends StepSlug<F>> = FlowSteps<F>[S]["input"];

/**
 * What a step produces: its handler's (awaited) output, or the array of them for a map step.
 *
 * @typeParam F A flow (plain, step-queued or deployed).
 * @typeParam S A step slug of `F`.
 *
 * @example Usage
 * ```ts
 * import { Flow, type StepOutput } from "@sluice/sluice";
 *
 * const flow = new Flow<string[]>({ slug: "f" }).map({ slug: "len" }, (item) => item.length);
 * const output: StepOutput<typeof flow, "len"> = [3, 5];
 * ```
 */
export type StepOutput<F extends DeployableFlow, S extends StepSlug<F>> = FlowSteps<F>[S]["output"];
