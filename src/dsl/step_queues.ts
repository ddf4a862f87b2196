/**
 * `withStepQueues()`: one generated private queue per step, so a slow step cannot starve the
 * others and each step gets its own workers.
 *
 * @module
 */

import { registeredRouting, registerRouting } from "./routing.ts";
import { formatValue } from "./_validate.ts";
import { type AnyFlow, Flow } from "./flow.ts";
import { stepQueueNames } from "./queue_name.ts";

/** Type-only brand: only `withStepQueues()` produces a `StepQueuedFlow`. */
declare const stepQueuedFlowBrand: unique symbol;

/**
 * One step's queue.
 *
 * @typeParam Slug The step slug union.
 *
 * @example Usage
 * ```ts
 * import type { StepRoute } from "@sluice/sluice";
 *
 * const route: StepRoute<"fetch"> = { stepSlug: "fetch", queueName: "orders__fetch" };
 * ```
 */
export interface StepRoute<Slug extends string = string> {
  /** The step slug. */
  readonly stepSlug: Slug;
  /** The queue its tasks are sent to. */
  readonly queueName: string;
}

/**
 * A flow deployed with one generated private queue per step. Frozen; keeps the exact type of
 * the wrapped flow. Only {@linkcode withStepQueues} creates one, and {@linkcode isStepQueuedFlow}
 * tells a real one from a look-alike.
 *
 * @typeParam F The wrapped flow.
 *
 * @example Usage
 * ```ts
 * import { Flow, type StepQueuedFlow, withStepQueues } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
 * const queued: StepQueuedFlow<typeof flow> = withStepQueues(flow);
 * console.log(queued.routes); // [{ stepSlug: "fetch", queueName: "orders__fetch" }]
 * ```
 */
export interface StepQueuedFlow<F extends AnyFlow = AnyFlow> {
  /** Type-only brand. */
  readonly [stepQueuedFlowBrand]: true;
  /** The wrapped flow. */
  readonly flow: F;
  /** Always `"step"`. */
  readonly queueMode: "step";
  /** One route per step, in step order. */
  readonly routes: readonly StepRoute<
    F extends Flow<unknown, infer Steps> ? keyof Steps & string : never
  >[];
}

/**
 * Gives every step of `flow` its own private queue: `lower(flow__step)` when it has at most 47
 * characters, else `lower(flow__index)`. Checks every name synchronously, before any I/O.
 *
 * @typeParam F The flow type, preserved exactly.
 * @param flow The flow to wrap.
 * @returns A frozen step-queued flow.
 * @throws {QueueNameError} When the flow has no steps, its slug is too long even for
 * `<flow>__0`, a step's readable and fallback names both exceed 47 characters, or two steps
 * resolve to one queue.
 * @throws {TypeError} When `flow` is not a `Flow`.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 *
 * const flow = new Flow<{ id: number }>({ slug: "orders" })
 *   .step({ slug: "slow" }, async (input) => ({ id: input.id }))
 *   .step({ slug: "fast" }, (input) => input.id);
 * const queued = withStepQueues(flow);
 * console.log(queued.routes.map((route) => route.queueName)); // ["orders__slow", "orders__fast"]
 * ```
 */
export function withStepQueues<F extends AnyFlow>(flow: F): StepQueuedFlow<F> {
  const routing = registeredRouting(flow);
  if (routing?.alias !== undefined) {
    throw new TypeError(
      `Cannot add step queues to the deployed flow ${JSON.stringify(routing.flow.slug)} (alias ${
        JSON.stringify(routing.alias)
      }): add them to the concrete flow first, ` +
        "defineDeployedFlow(withStepQueues(flow), { alias })",
    );
  }
  if (!(flow instanceof Flow)) {
    throw new TypeError(
      `Cannot add step queues to ${formatValue(flow)}: expected a Flow`,
    );
  }
  const queueNames = stepQueueNames(flow.slug, flow.steps.map((step) => step.slug));
  const routes = Object.freeze(
    flow.steps.map((step, index) =>
      Object.freeze({
        stepSlug: step.slug as StepQueuedFlow<F>["routes"][number]["stepSlug"],
        queueName: queueNames[index],
      })
    ),
  );
  const queued = Object.freeze({ flow, queueMode: "step", routes }) as unknown as StepQueuedFlow<F>;
  registerRouting(queued, { flow, queueMode: "step", queueNames: Object.freeze(queueNames) });
  return queued;
}

/**
 * Tells whether `value` was returned by {@linkcode withStepQueues} (a copy or look-alike is not).
 *
 * @param value Any value.
 * @returns `true` for a genuine step-queued flow.
 *
 * @example Usage
 * ```ts
 * import { Flow, isStepQueuedFlow, withStepQueues } from "@sluice/sluice";
 *
 * const queued = withStepQueues(new Flow({ slug: "f" }).step({ slug: "a" }, () => 1));
 * console.log(isStepQueuedFlow(queued)); // true
 * console.log(isStepQueuedFlow({ ...queued })); // false
 * ```
 */
export function isStepQueuedFlow(value: unknown): value is StepQueuedFlow {
  const routing = registeredRouting(value);
  return routing?.queueMode === "step" && routing.alias === undefined;
}
