/**
 * `createWorkerHandler()`: the request handler of a worker function, for hosting in a
 * `Deno.serve` of your own. {@linkcode serveWorker} wraps it for a complete Edge Function.
 *
 * @module
 */

import type { DeployedFlow } from "../dsl/deployed_flow.ts";
import type { AnyFlow } from "../dsl/flow.ts";
import type { StepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow, StepSlug } from "../dsl/types.ts";
import type { AliasActivationOptions } from "../worker/worker_options.ts";
import { WorkerFunctionHost } from "./_host.ts";
import type { AnyWorkerFunctionOptions } from "./_host_config.ts";
import type {
  StepWorkerFunctionOptions,
  WorkerFunctionHandler,
  WorkerFunctionOptions,
} from "./edge_options.ts";

/**
 * Creates the request handler of a plain flow's worker function, for hosting in a `Deno.serve` of
 * your own. Use {@linkcode serveWorker} for a complete Edge Function entrypoint.
 *
 * @param flow The flow whose steps the worker runs.
 * @param options Worker, connection, authorization and lifecycle options.
 * @returns The handler; pass `handler.fetch` to `Deno.serve`.
 * @throws {StepSlugError} When a `stepSlug` is given: a plain flow's worker runs every step.
 * @throws {TypeError} When options are inconsistent (both `sql` and `connectionString`, an
 * invalid `selfUrl`).
 * @throws {RangeError} When `wallClockBudgetMs`, `drainTimeoutMs` or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const flow = new Flow<{ n: number }>({ slug: "double" })
 *   .step({ slug: "twice" }, (input) => input.n * 2);
 * const handler = createWorkerHandler(flow, { secret: Deno.env.get("WORKER_SECRET") });
 * Deno.serve({ port: 8080 }, handler.fetch);
 * ```
 */
export function createWorkerHandler<F extends AnyFlow>(
  flow: F,
  options?: WorkerFunctionOptions,
): WorkerFunctionHandler;
/**
 * Creates the request handler of the worker function of one step of a step-queued flow: its
 * worker polls that step's private queue. `functionName` defaults to the name
 * `deno task gen:functions` gives the function (`workerFunctionName(flowSlug, stepSlug)`).
 *
 * @param flow A flow returned by `withStepQueues()`.
 * @param options `stepSlug` (required, typed as the flow's step-slug union) plus worker,
 * connection, authorization and lifecycle options.
 * @returns The handler; pass `handler.fetch` to `Deno.serve`.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When options are inconsistent (both `sql` and `connectionString`, an
 * invalid `selfUrl`).
 * @throws {RangeError} When `wallClockBudgetMs`, `drainTimeoutMs` or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const digest = withStepQueues(
 *   new Flow<{ text: string }>({ slug: "digest" })
 *     .step({ slug: "classify" }, (input) => input.text.length)
 *     .step({ slug: "deliver", dependsOn: ["classify"] }, (deps) => deps.classify),
 * );
 * const handler = createWorkerHandler(digest, { stepSlug: "classify" }); // "digest--classify"
 * Deno.serve({ port: 8080 }, handler.fetch);
 * ```
 */
export function createWorkerHandler<Q extends StepQueuedFlow>(
  flow: Q,
  options: StepWorkerFunctionOptions<StepSlug<Q>>,
): WorkerFunctionHandler;
/**
 * Creates the request handler of a deployed plain flow's worker function: the wrapped flow's,
 * whose worker also activates the alias at startup with `activate: "on-startup"` (see
 * `startWorker`). On Edge every respawn starts a worker, which finds the alias already active.
 *
 * @param flow A flow returned by `defineDeployedFlow()` around a plain flow.
 * @param options `activate` plus the options of a plain flow's worker function.
 * @returns The handler; pass `handler.fetch` to `Deno.serve`.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`, or options are
 * inconsistent.
 * @throws {RangeError} When `wallClockBudgetMs`, `drainTimeoutMs` or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const v2 = new Flow({ slug: "greet_v2" }).step({ slug: "compose" }, () => "hi");
 * const greet = defineDeployedFlow(v2, { alias: "greet" });
 * Deno.serve({ port: 8080 }, createWorkerHandler(greet, { activate: "on-startup" }).fetch);
 * ```
 */
export function createWorkerHandler<F extends AnyFlow>(
  flow: DeployedFlow<F>,
  options?: WorkerFunctionOptions & AliasActivationOptions,
): WorkerFunctionHandler;
/**
 * Creates the request handler of one step's worker function of a deployed step-queued flow: the
 * wrapped flow's (`stepSlug` required), whose worker also activates the alias at startup with
 * `activate: "on-startup"` once every step has a live worker.
 *
 * @param flow A flow returned by `defineDeployedFlow()` around a `withStepQueues()` flow.
 * @param options `stepSlug`, `activate` plus the options of a step's worker function.
 * @returns The handler; pass `handler.fetch` to `Deno.serve`.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`, or options are
 * inconsistent.
 * @throws {RangeError} When `wallClockBudgetMs`, `drainTimeoutMs` or `poolSize` is out of range.
 *
 * @example Usage
 * ```ts ignore
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 * import { createWorkerHandler } from "@sluice/sluice/edge";
 *
 * const v2 = withStepQueues(new Flow({ slug: "digest_v2" }).step({ slug: "classify" }, () => 1));
 * const digest = defineDeployedFlow(v2, { alias: "digest" });
 * const handler = createWorkerHandler(digest, { stepSlug: "classify", activate: "on-startup" });
 * Deno.serve({ port: 8080 }, handler.fetch);
 * ```
 */
export function createWorkerHandler<D extends DeployedFlow<StepQueuedFlow>>(
  flow: D,
  options: StepWorkerFunctionOptions<StepSlug<D>> & AliasActivationOptions,
): WorkerFunctionHandler;
export function createWorkerHandler(
  flow: DeployableFlow,
  options: AnyWorkerFunctionOptions = {},
): WorkerFunctionHandler {
  return new WorkerFunctionHost(flow, options);
}
