/**
 * `resolveWorkerTarget()`: what a worker of a flow serves — its one queue, the steps it runs and
 * its worker function — checked synchronously, before any database access.
 *
 * @module
 */

import { extractDefinition } from "../dsl/definition.ts";
import type { DeployedFlow } from "../dsl/deployed_flow.ts";
import type { AnyFlow } from "../dsl/flow.ts";
import { workerFunctionName } from "../dsl/function_name.ts";
import { routingOf } from "../dsl/routing.ts";
import type { StepQueuedFlow } from "../dsl/step_queues.ts";
import type { DeployableFlow, StepSlug } from "../dsl/types.ts";
import type {
  AliasActivationMode,
  AliasActivationOptions,
  StepWorkerOptions,
  WorkerOptions,
} from "./worker_options.ts";
import { StepSlugError } from "./step_slug_error.ts";

/**
 * What a worker serves: one queue, and the `(flow, step)` pairs it claims from it.
 *
 * @example Usage
 * ```ts
 * import type { WorkerTarget } from "@sluice/sluice/worker";
 *
 * const target: WorkerTarget = {
 *   flowSlug: "thread_digest",
 *   stepSlug: "classify",
 *   stepSlugs: ["classify"],
 *   queueName: "thread_digest__classify",
 *   functionName: "thread-digest--classify",
 *   alias: null,
 *   activate: null,
 * };
 * ```
 */
export interface WorkerTarget {
  /** The concrete flow slug. */
  readonly flowSlug: string;
  /** The step of a step worker; `null` for a plain flow's worker (it runs every step). */
  readonly stepSlug: string | null;
  /** The steps whose tasks the worker claims: every step of a plain flow, or the one step. */
  readonly stepSlugs: readonly string[];
  /** The one queue the worker polls. */
  readonly queueName: string;
  /**
   * The worker function: the `functionName` option, else `workerFunctionName(flowSlug, stepSlug)`
   * (`null` step for a plain flow): the name `deno task gen:functions` gives its Edge Function.
   */
  readonly functionName: string;
  /** A deployed flow's alias; `null` for a concrete flow. */
  readonly alias: string | null;
  /** A deployed flow's `activate` mode (default `"manual"`); `null` for a concrete flow. */
  readonly activate: AliasActivationMode | null;
}

/** The options that decide a worker's target. */
type TargetOptions = Pick<WorkerOptions, "functionName" | "stepSlug">;
/** The options that decide a step worker's target. */
type StepTargetOptions<Slug extends string> = Pick<
  StepWorkerOptions<Slug>,
  "functionName" | "stepSlug"
>;

/**
 * The target of a plain flow's worker: queue `lower(flow.slug)`, every step.
 *
 * @param flow A plain flow.
 * @param options `functionName` (default: `workerFunctionName(flow slug, null)`, e.g.
 * `greet-user`); a `stepSlug` is rejected.
 * @returns What the worker serves.
 * @throws {StepSlugError} When a `stepSlug` is given (reason `not_step_queued`).
 * @throws {TypeError} When `flow` is not a `Flow`, or `functionName` is not a non-empty string.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 * import { resolveWorkerTarget } from "@sluice/sluice/worker";
 *
 * const flow = new Flow({ slug: "greet_user" }).step({ slug: "compose" }, () => "hi");
 * console.log(resolveWorkerTarget(flow).queueName); // "greet_user"
 * ```
 */
export function resolveWorkerTarget<F extends AnyFlow>(
  flow: F,
  options?: TargetOptions,
): WorkerTarget;
/**
 * The target of one step's worker of a step-queued flow: that step's private queue, that step
 * only.
 *
 * @param flow A flow returned by `withStepQueues()`.
 * @param options `stepSlug` (required, one of the flow's steps) and `functionName` (default:
 * `workerFunctionName(flow slug, stepSlug)`).
 * @returns What the worker serves.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow; the error lists
 * the valid slugs.
 * @throws {TypeError} When `flow` is a look-alike rather than a flow returned by
 * `withStepQueues()`, or `functionName` is not a non-empty string.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import { resolveWorkerTarget } from "@sluice/sluice/worker";
 *
 * const digest = withStepQueues(
 *   new Flow({ slug: "thread_digest" }).step({ slug: "classify" }, () => "question"),
 * );
 * const target = resolveWorkerTarget(digest, { stepSlug: "classify" });
 * console.log(target.queueName, target.functionName);
 * // "thread_digest__classify" "thread-digest--classify"
 * ```
 */
export function resolveWorkerTarget<Q extends StepQueuedFlow>(
  flow: Q,
  options: StepTargetOptions<StepSlug<Q>>,
): WorkerTarget;
/**
 * The target of a deployed plain flow's worker: that of the wrapped flow, plus its alias and
 * whether the worker activates it at startup.
 *
 * @param flow A flow returned by `defineDeployedFlow()` around a plain flow.
 * @param options `functionName` and `activate`; a `stepSlug` is rejected.
 * @returns What the worker serves.
 * @throws {StepSlugError} When a `stepSlug` is given (reason `not_step_queued`).
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, Flow } from "@sluice/sluice";
 * import { resolveWorkerTarget } from "@sluice/sluice/worker";
 *
 * const v2 = new Flow({ slug: "greet_user_v2" }).step({ slug: "compose" }, () => "hi");
 * const greet = defineDeployedFlow(v2, { alias: "greet_user" });
 * const target = resolveWorkerTarget(greet, { activate: "on-startup" });
 * console.log(target.queueName, target.alias); // "greet_user_v2" "greet_user"
 * ```
 */
export function resolveWorkerTarget<F extends AnyFlow>(
  flow: DeployedFlow<F>,
  options?: TargetOptions & AliasActivationOptions,
): WorkerTarget;
/**
 * The target of one step's worker of a deployed step-queued flow: that of the wrapped flow, plus
 * its alias and whether the worker activates it at startup.
 *
 * @param flow A flow returned by `defineDeployedFlow()` around a `withStepQueues()` flow.
 * @param options `stepSlug` (required), `functionName` and `activate`.
 * @returns What the worker serves.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of the flow.
 * @throws {TypeError} When `activate` is neither `"on-startup"` nor `"manual"`.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 * import { resolveWorkerTarget } from "@sluice/sluice/worker";
 *
 * const v2 = withStepQueues(new Flow({ slug: "digest_v2" }).step({ slug: "classify" }, () => 1));
 * const digest = defineDeployedFlow(v2, { alias: "digest" });
 * console.log(resolveWorkerTarget(digest, { stepSlug: "classify" }).queueName);
 * // "digest_v2__classify"
 * ```
 */
export function resolveWorkerTarget<D extends DeployedFlow<StepQueuedFlow>>(
  flow: D,
  options: StepTargetOptions<StepSlug<D>> & AliasActivationOptions,
): WorkerTarget;
export function resolveWorkerTarget(
  flow: DeployableFlow,
  options: {
    readonly functionName?: string;
    readonly stepSlug?: string;
    readonly activate?: AliasActivationMode;
  } = {},
): WorkerTarget {
  // Rejects anything but a Flow or a genuine wrapper (a TypeError).
  const definition = extractDefinition(flow);
  const alias = routingOf(flow).alias ?? null;
  const flowSlug = definition.flow_slug;
  const steps = definition.routes.map((route) => route.step_slug);
  const stepSlug: unknown = options.stepSlug;
  const fail = (reason: StepSlugError["reason"], message: string): never => {
    throw new StepSlugError(
      `Cannot start worker for flow ${JSON.stringify(flowSlug)}: ${message}`,
      { reason, flowSlug, stepSlug, stepSlugs: steps },
    );
  };
  const validSlugs = steps.map((slug) => JSON.stringify(slug)).join(", ");

  let target: Omit<WorkerTarget, "functionName" | "alias" | "activate">;
  if (definition.queue_mode === "flow") {
    const queueName = definition.routes[0].queue_name;
    if (stepSlug !== undefined) {
      return fail(
        "not_step_queued",
        `stepSlug ${JSON.stringify(stepSlug)} is only for step-queued flows. A plain flow's ` +
          `worker polls queue ${JSON.stringify(queueName)} and runs every step: remove ` +
          "stepSlug, or wrap the flow with withStepQueues(flow) to give each step its own queue " +
          "and worker",
      );
    }
    target = { flowSlug, stepSlug: null, stepSlugs: steps, queueName };
  } else {
    if (stepSlug === undefined) {
      return fail(
        "missing",
        `a step-queued flow's worker serves one step: give stepSlug, one of ${validSlugs}`,
      );
    }
    const route = definition.routes.find((candidate) => candidate.step_slug === stepSlug);
    if (route === undefined) {
      return fail(
        "unknown",
        `stepSlug ${JSON.stringify(stepSlug)} is not a step of the flow; give one of ${validSlugs}`,
      );
    }
    target = {
      flowSlug,
      stepSlug: route.step_slug,
      stepSlugs: [route.step_slug],
      queueName: route.queue_name,
    };
  }

  const functionName = options.functionName ?? workerFunctionName(flowSlug, target.stepSlug);
  if (typeof functionName !== "string" || functionName === "") {
    throw new TypeError(
      `Cannot start worker for flow ${JSON.stringify(flowSlug)}: functionName must be a ` +
        `non-empty string, got ${JSON.stringify(functionName)}`,
    );
  }
  return Object.freeze({
    ...target,
    stepSlugs: Object.freeze(target.stepSlugs),
    functionName,
    alias,
    activate: activationMode(flowSlug, alias, options.activate),
  });
}

/** The `activate` option checked: only a deployed flow's worker takes one. */
function activationMode(
  flowSlug: string,
  alias: string | null,
  activate: unknown,
): AliasActivationMode | null {
  const context = `Cannot start worker for flow ${JSON.stringify(flowSlug)}`;
  if (alias === null) {
    if (activate === undefined) return null;
    throw new TypeError(
      `${context}: activate ${
        JSON.stringify(activate)
      } is only for a deployed flow's worker (the alias to activate comes from ` +
        "defineDeployedFlow(flow, { alias })); remove activate",
    );
  }
  if (activate === undefined) return "manual";
  if (activate !== "on-startup" && activate !== "manual") {
    throw new TypeError(
      `${context} (alias ${JSON.stringify(alias)}): activate must be "on-startup" or "manual", ` +
        `got ${JSON.stringify(activate)}`,
    );
  }
  return activate;
}
