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
  readonly alias?: string;
}

const registry = new WeakMap<object, Routing>();

/** Records the routing of a wrapper that a constructor of this folder built. */
export function registerRouting(wrapper: object, routing: Routing): void {
  registry.set(wrapper, Object.freeze(routing));
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
