/**
 * `defineDeployedFlow()`: a concrete flow (plain or step-queued) with the stable name callers
 * start it by. Starting a `DeployedFlow` goes through its alias, resolved when the run starts;
 * its workers serve the concrete flow, exactly as the wrapped flow's would.
 *
 * @module
 */

import { formatValue } from "./_validate.ts";
import { FlowDefinitionError } from "./errors.ts";
import { type AnyFlow, Flow } from "./flow.ts";
import { registeredRouting, registerRouting, routingOf } from "./routing.ts";
import { slugProblem } from "./slug.ts";
import type { StepQueuedFlow } from "./step_queues.ts";

/** Type-only brand: only `defineDeployedFlow()` produces a `DeployedFlow`. */
declare const deployedFlowBrand: unique symbol;

/**
 * A concrete flow published under a stable alias. Frozen; keeps the exact type of the wrapped
 * flow (its input, outputs and step-slug union). Only {@linkcode defineDeployedFlow} creates one,
 * and {@linkcode isDeployedFlow} tells a real one from a look-alike.
 *
 * @typeParam F The wrapped flow: a plain `Flow` or a `StepQueuedFlow`.
 * @typeParam A The alias.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, type DeployedFlow, Flow } from "@sluice/sluice";
 *
 * const ordersV2 = new Flow<{ id: number }>({ slug: "orders_v2" })
 *   .step({ slug: "load" }, (input) => input.id);
 * const orders: DeployedFlow<typeof ordersV2, "orders"> = defineDeployedFlow(ordersV2, {
 *   alias: "orders",
 * });
 * console.log(orders.alias, orders.flow.slug); // "orders" "orders_v2"
 * ```
 */
export interface DeployedFlow<
  F extends AnyFlow | StepQueuedFlow = AnyFlow | StepQueuedFlow,
  A extends string = string,
> {
  /** Type-only brand. */
  readonly [deployedFlowBrand]: true;
  /** The wrapped concrete flow. */
  readonly flow: F;
  /** The alias callers start it by. */
  readonly alias: A;
}

/**
 * Options of {@linkcode defineDeployedFlow}.
 *
 * @typeParam A The alias.
 *
 * @example Usage
 * ```ts
 * import type { DeployedFlowOptions } from "@sluice/sluice";
 *
 * const options: DeployedFlowOptions<"orders"> = { alias: "orders" };
 * ```
 */
export interface DeployedFlowOptions<A extends string = string> {
  /**
   * The stable name callers start runs by: a slug (the flow slug rules). It may be the name of
   * an earlier version (`orders` for `orders_v2`): activating it re-points that name.
   */
  readonly alias: A;
}

/**
 * Publishes a concrete flow under a stable alias. `startFlow(sql, deployed, input)` starts
 * through the alias (the flow it points at when the run starts); `startWorker(deployed, ...)`
 * serves the concrete flow as `startWorker(flow, ...)` would, and can activate the alias once
 * its workers run (`activate: "on-startup"`). Checks the alias synchronously, before any I/O.
 *
 * @typeParam F The wrapped flow, preserved exactly.
 * @typeParam A The alias.
 * @param flow A `Flow` or a flow returned by `withStepQueues()`.
 * @param options The alias.
 * @returns A frozen deployed flow.
 * @throws {FlowDefinitionError} When the alias is not a slug (reason `invalid_slug`, option
 * `alias`).
 * @throws {TypeError} When `flow` is already a deployed flow, or neither a `Flow` nor a flow
 * returned by `withStepQueues()`, or `options` is not an object.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 *
 * const ordersV2 = withStepQueues(
 *   new Flow<{ id: number }>({ slug: "orders_v2" })
 *     .step({ slug: "charge" }, (input) => input.id)
 *     .step({ slug: "ship", dependsOn: ["charge"] }, (deps) => deps.charge),
 * );
 * const orders = defineDeployedFlow(ordersV2, { alias: "orders" });
 * console.log(orders.alias); // "orders"
 * ```
 */
export function defineDeployedFlow<F extends AnyFlow | StepQueuedFlow, const A extends string>(
  flow: F,
  options: DeployedFlowOptions<A>,
): DeployedFlow<F, A> {
  const existing = registeredRouting(flow)?.alias;
  if (existing !== undefined) {
    throw new TypeError(
      `Cannot deploy a deployed flow: it is already deployed as alias ${
        JSON.stringify(existing)
      }; pass the concrete flow (deployed.flow) to defineDeployedFlow()`,
    );
  }
  if (!(flow instanceof Flow) && registeredRouting(flow) === undefined) {
    throw new TypeError(
      `Cannot deploy ${formatValue(flow)}: expected a Flow or a flow returned by withStepQueues()`,
    );
  }
  const routing = routingOf(flow);
  const flowSlug = routing.flow.slug;
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      `Cannot deploy flow ${JSON.stringify(flowSlug)}: options { alias } are required, got ${
        formatValue(options)
      }`,
    );
  }
  const alias: unknown = options.alias;
  const problem = slugProblem(alias as string);
  if (problem !== undefined) {
    throw new FlowDefinitionError(
      `Cannot deploy flow ${JSON.stringify(flowSlug)} as alias ${formatValue(alias)}: ${problem}`,
      { flowSlug, stepSlug: undefined, reason: "invalid_slug", option: "alias", value: alias },
    );
  }
  const deployed = Object.freeze({ flow, alias }) as unknown as DeployedFlow<F, A>;
  registerRouting(deployed, { ...routing, alias: alias as string });
  return deployed;
}

/**
 * Tells whether `value` was returned by {@linkcode defineDeployedFlow} (a copy or look-alike is
 * not).
 *
 * @param value Any value.
 * @returns `true` for a genuine deployed flow.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { isDeployedFlow } from "@sluice/sluice/admin";
 *
 * const flow = new Flow({ slug: "orders_v2" }).step({ slug: "a" }, () => 1);
 * const orders = defineDeployedFlow(flow, { alias: "orders" });
 * console.log(isDeployedFlow(orders), isDeployedFlow({ ...orders })); // true false
 * ```
 */
export function isDeployedFlow(value: unknown): value is DeployedFlow {
  return aliasOf(value) !== undefined;
}

/**
 * The alias of a deployed flow, or `undefined` for anything else (a plain or step-queued flow
 * is started by its concrete slug).
 *
 * @param value Any value.
 * @returns The alias `defineDeployedFlow()` registered, or `undefined`.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { aliasOf } from "@sluice/sluice/admin";
 *
 * const flow = new Flow({ slug: "orders_v2" }).step({ slug: "a" }, () => 1);
 * console.log(aliasOf(defineDeployedFlow(flow, { alias: "orders" }))); // "orders"
 * console.log(aliasOf(flow)); // undefined
 * ```
 */
export function aliasOf(value: unknown): string | undefined {
  return registeredRouting(value)?.alias;
}
