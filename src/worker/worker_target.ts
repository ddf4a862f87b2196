/**
 * `resolveWorkerTarget()`: what a worker of a flow serves — its one queue, the steps it runs and
 * its worker function — checked synchronously, before any database access. `targetOf()`, its
 * untyped core, is what the worker's option resolver (`worker_config.ts`) calls.
 *
 * @module
 */

import { extractDefinition, servedStepSlugs } from "../dsl/definition.ts";
import { workerFunctionName } from "../dsl/function_name.ts";
import { routingOf } from "../dsl/routing.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import type {
  AliasActivationMode,
  FlowOptionsArgument,
  WorkerTargetOptions,
} from "./worker_options.ts";
import { StepSlugError } from "./step_slug_error.ts";

/**
 * What a worker serves: one queue, and the `(flow, step)` pairs it claims from it.
 *
 * @example Usage
 * ```ts
 * import type { WorkerTarget } from "@sluice/sluice/admin";
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
   * The worker function: the `functionName` option, else the step's function in
   * `withStepQueues(flow, { functions })`, else `workerFunctionName(flowSlug, stepSlug)`
   * (`null` step for a plain flow): the name `deno task gen:functions` gives its Edge Function.
   */
  readonly functionName: string;
  /** A deployed flow's alias; `null` for a concrete flow. */
  readonly alias: string | null;
  /** A deployed flow's `activate` mode (default `"manual"`); `null` for a concrete flow. */
  readonly activate: AliasActivationMode | null;
}

/**
 * What a worker of `flow` serves: for a plain flow its one queue `lower(flow.slug)` and every
 * step; for a step-queued flow (`withStepQueues()`) the private queue of `options.stepSlug` and
 * that step only; for a deployed flow (`defineDeployedFlow()`) the wrapped flow's, plus its alias
 * and whether the worker activates it at startup. The options are keyed on the flow
 * ({@linkcode WorkerTargetOptions}): `stepSlug` (and so the options) is required exactly for a
 * step-queued flow, `activate` is only for a deployed one.
 *
 * @typeParam F The flow.
 * @param flow A flow, a flow returned by `withStepQueues()`, or one returned by
 * `defineDeployedFlow()`.
 * @param options `functionName` (default: `workerFunctionName(flow slug, stepSlug)`, e.g.
 * `greet-user` for a plain flow), `stepSlug` (a step-queued flow: required, one of its steps) and
 * `activate` (a deployed flow: `"on-startup"` or `"manual"`, the default).
 * @returns What the worker serves.
 * @throws {StepSlugError} When `stepSlug` is missing or not a step of a step-queued flow, or given
 * for a plain flow; the error names the bad slug and lists the valid ones.
 * @throws {TypeError} When `flow` is a look-alike rather than a flow, `functionName` is not a
 * non-empty string, or `activate` is given for a concrete flow or is neither `"on-startup"` nor
 * `"manual"`.
 *
 * @example Usage
 * ```ts
 * import { defineDeployedFlow, Flow, withStepQueues } from "@sluice/sluice";
 * import { resolveWorkerTarget } from "@sluice/sluice/admin";
 *
 * const greet = new Flow({ slug: "greet_user" }).step({ slug: "compose" }, () => "hi");
 * console.log(resolveWorkerTarget(greet).queueName); // "greet_user"
 *
 * const digest = withStepQueues(
 *   new Flow({ slug: "thread_digest" }).step({ slug: "classify" }, () => "question"),
 * );
 * const target = resolveWorkerTarget(digest, { stepSlug: "classify" });
 * console.log(target.queueName, target.functionName);
 * // "thread_digest__classify" "thread-digest--classify"
 *
 * const deployed = defineDeployedFlow(digest, { alias: "digest" });
 * console.log(resolveWorkerTarget(deployed, { stepSlug: "classify", activate: "on-startup" }).alias);
 * // "digest"
 * ```
 */
export function resolveWorkerTarget<F extends DeployableFlow>(
  flow: F,
  ...[options]: FlowOptionsArgument<F, WorkerTargetOptions<F>>
): WorkerTarget {
  return targetOf(flow, options ?? {});
}

/**
 * {@linkcode resolveWorkerTarget} of a flow of any kind, its options checked at run time only
 * (the resolver of `worker_config.ts`, for callers whose types were checked by their own
 * signature). Not part of the public API.
 */
export function targetOf(flow: DeployableFlow, options: WorkerTargetOptions): WorkerTarget {
  // Rejects anything but a Flow or a genuine wrapper (a TypeError).
  const definition = extractDefinition(flow);
  const alias = routingOf(flow).alias ?? null;
  const flowSlug = definition.flow_slug;
  const steps = servedStepSlugs(definition);
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
    const route = definition.routes.find((candidate) =>
      candidate.step_slug === stepSlug && steps.includes(candidate.step_slug)
    );
    if (route === undefined) {
      const wait = definition.steps.find((step) => step.step_slug === stepSlug);
      return fail(
        "unknown",
        wait === undefined
          ? `stepSlug ${
            JSON.stringify(stepSlug)
          } is not a step of the flow; give one of ${validSlugs}`
          : `stepSlug ${
            JSON.stringify(stepSlug)
          } is a wait step (${wait.step_type}): it holds no ` +
            `task, so no worker serves it (docs/waits.md); give one of ${validSlugs}`,
      );
    }
    target = {
      flowSlug,
      stepSlug: route.step_slug,
      stepSlugs: [route.step_slug],
      queueName: route.queue_name,
    };
  }

  // A co-hosted step's function is the one withStepQueues(flow, { functions }) names.
  const routing = routingOf(flow);
  const hostName = target.stepSlug === null ? undefined : routing.functionNames
    ?.[routing.flow.steps.findIndex((step) => step.slug === target.stepSlug)];
  const functionName = options.functionName ?? hostName ??
    workerFunctionName(flowSlug, target.stepSlug);
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
