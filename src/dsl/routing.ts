/**
 * Where each step's tasks are queued. A plain `Flow` routes every step to its own queue; wrappers
 * (`withStepQueues`, `defineDeployedFlow`, and later explicit routing) register their routes here
 * when they construct them. Only constructors of `src/dsl/` register, so a look-alike object is never treated as a
 * wrapper: extraction, clients and workers trust only what is registered, through
 * {@linkcode routingOf}. Not part of the public API.
 *
 * @module
 */

import { type AnyFlow, Flow } from "./flow.ts";
import { formatValue } from "./_validate.ts";
import { flowQueueName } from "./queue_name.ts";
import { registerStartRef } from "./_start_refs.ts";

/**
 * How a flow's routes are derived: `flow` (every step on `lower(flow_slug)`), `step` (one
 * generated private queue per step), `routed` (explicit shared queues).
 *
 * @example Usage
 * ```ts
 * import type { QueueMode } from "@sluice/sluice";
 *
 * const mode: QueueMode = "step";
 * ```
 */
export type QueueMode = "flow" | "step" | "routed";

/**
 * A flow with its queue mode and one queue name per step, in step order; for a deployed flow,
 * also the alias it is started by.
 */
export interface Routing {
  readonly flow: AnyFlow;
  readonly queueMode: QueueMode;
  readonly queueNames: readonly string[];
  /**
   * A step-queued flow's worker function per step, in step order (`withStepQueues(flow,
   * { functions })`, else `workerFunctionName(flow, step)`); absent for a plain flow (one function).
   */
  readonly functionNames?: readonly string[];
  readonly alias?: string;
}

const registry = new WeakMap<object, Routing>();

/** Records the routing of a wrapper that a constructor of this folder built. */
export function registerRouting(wrapper: object, routing: Routing): void {
  registry.set(wrapper, Object.freeze(routing));
  registerStartRef(
    wrapper,
    routing.alias === undefined
      ? { ref: routing.flow.slug, concrete: true }
      : { ref: routing.alias, concrete: false },
  );
}

/** The registered routing of `value`, or `undefined` when it is not a registered wrapper. */
export function registeredRouting(value: unknown): Routing | undefined {
  return typeof value === "object" && value !== null ? registry.get(value) : undefined;
}

/**
 * The routing of a plain flow or a registered wrapper: the one place that unwraps a deployable
 * flow into its plain `Flow`.
 *
 * @throws {TypeError} When `value` is neither.
 */
export function routingOf(value: unknown): Routing {
  if (value instanceof Flow) {
    const queueName = flowQueueName(value.slug);
    return { flow: value, queueMode: "flow", queueNames: value.steps.map(() => queueName) };
  }
  const routing = registeredRouting(value);
  if (routing === undefined) {
    throw new TypeError(
      `Cannot resolve the routes of ${
        formatValue(value)
      }: expected a Flow or a flow returned by withStepQueues() or defineDeployedFlow()`,
    );
  }
  return routing;
}

/**
 * What a run of `flow` is started by: the alias of a deployed flow (resolved when the run
 * starts), else the concrete slug; a string is a name given by the caller (an alias or a slug).
 */
export function startRefOf(flow: unknown): { readonly ref: string; readonly concrete: boolean } {
  if (typeof flow === "string") return { ref: flow, concrete: false };
  const routing = routingOf(flow);
  return routing.alias === undefined
    ? { ref: routing.flow.slug, concrete: true }
    : { ref: routing.alias, concrete: false };
}

/**
 * The steps of `flow` that the worker function `functionName` hosts (`withStepQueues(flow,
 * { functions })`), in step order, wait steps left out (no worker serves them).
 *
 * @throws {TypeError} When `flow` is not step-queued or has no step hosted by the function; the
 * message starts with `context` and lists the flow's functions.
 */
export function stepsHostedBy(flow: unknown, functionName: string, context: string): string[] {
  const routing = routingOf(flow);
  if (routing.functionNames === undefined) {
    throw new TypeError(
      `${context}: flow ${JSON.stringify(routing.flow.slug)} is a plain flow, served by its own ` +
        "function; only steps of flows wrapped with withStepQueues(flow, { functions }) are co-hosted",
    );
  }
  const names = routing.functionNames;
  const hosted = routing.flow.steps
    .filter((step, index) => names[index] === functionName && step.wait === null)
    .map((step) => step.slug);
  if (hosted.length === 0) {
    throw new TypeError(
      `${context}: flow ${JSON.stringify(routing.flow.slug)} has no step hosted by it; its ` +
        `steps' functions: ${
          routing.flow.steps.map((step, index) => `${step.slug} -> ${names[index]}`).join(", ")
        }`,
    );
  }
  return hosted;
}
