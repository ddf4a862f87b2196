/**
 * `withStepQueues()`: one generated private queue per step, so a slow step cannot starve the
 * others and each step gets its own workers.
 *
 * @module
 */

import { registeredRouting, registerRouting } from "./routing.ts";
import { formatValue } from "./_validate.ts";
import { FlowDefinitionError } from "./errors.ts";
import { type AnyFlow, Flow } from "./flow.ts";
import { workerFunctionName } from "./function_name.ts";
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
 * Options of {@linkcode withStepQueues}.
 *
 * @typeParam Slug The step slug union: `functions` keys autocomplete from it, and an unknown key
 * is a type error.
 *
 * @example Usage
 * ```ts
 * import type { StepQueuesOptions } from "@sluice/sluice";
 *
 * const options: StepQueuesOptions<"render" | "send"> = { functions: { send: "office-mail" } };
 * ```
 */
export interface StepQueuesOptions<Slug extends string = string> {
  /**
   * The worker function that hosts each listed step (co-hosting): every step keeps its own
   * queue, worker and `maxConcurrent`, but the steps mapped to one name, from this flow and from
   * any other step-queued flow of the flows module, run in one generated Edge Function, one
   * worker per step on one pool. A step not listed keeps its own function,
   * `workerFunctionName(flow, step)`. Names are `[a-z][a-z0-9-]*` without `--` (which only
   * generated per-step names contain), at most 64 characters.
   *
   * @default {every step in its own function}
   */
  readonly functions?: { readonly [S in Slug]?: string };
}

/** What a co-hosting function name looks like: kebab words, never `--`, never a trailing `-`. */
const HOST_FUNCTION_NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const MAX_HOST_FUNCTION_NAME = 64;

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
  /**
   * The worker function of every step: the name given in `functions`, else the step's own
   * (`workerFunctionName(flow, step)`).
   */
  readonly functions: {
    readonly [S in F extends Flow<unknown, infer Steps> ? keyof Steps & string : never]: string;
  };
}

/**
 * Gives every step of `flow` its own private queue: `lower(flow__step)` when it has at most 47
 * characters, else `lower(flow__index)`. Checks every name synchronously, before any I/O.
 *
 * With `functions`, several steps (of this flow and of other step-queued flows) are co-hosted in
 * one worker function: `sluice functions generate` writes one Edge Function per name, whose
 * entrypoint starts one worker per step it hosts (docs/step_queues.md#co-hosting-steps-in-one-function).
 *
 * @typeParam F The flow type, preserved exactly.
 * @param flow The flow to wrap.
 * @param options `functions`: the worker function hosting each listed step.
 * @returns A frozen step-queued flow.
 * @throws {QueueNameError} When the flow has no steps, its slug is too long even for
 * `<flow>__0`, a step's readable and fallback names both exceed 47 characters, or two steps
 * resolve to one queue.
 * @throws {TypeError} When `flow` is not a `Flow`.
 * @throws {FlowDefinitionError} `invalid_option` when `functions` names a step the flow does not
 * have, or a function name breaks the rule; the error names the offending value.
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
 *
 * @example Co-hosting steps in one worker function
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 *
 * const invoices = withStepQueues(
 *   new Flow<{ id: number }>({ slug: "invoice_send" })
 *     .step({ slug: "render_pdf" }, (input) => `pdf ${input.id}`)
 *     .step({ slug: "email_invoice", dependsOn: ["render_pdf"] }, () => true)
 *     .step({ slug: "mark_sent", dependsOn: ["email_invoice"] }, () => true),
 *   { functions: { email_invoice: "office-interactive", mark_sent: "office-interactive" } },
 * );
 * console.log(invoices.functions.render_pdf); // "invoice-send--render-pdf"
 * console.log(invoices.functions.mark_sent); // "office-interactive"
 * ```
 */
export function withStepQueues<F extends AnyFlow>(
  flow: F,
  options: StepQueuesOptions<F extends Flow<unknown, infer Steps> ? keyof Steps & string : never> =
    {},
): StepQueuedFlow<F> {
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
  const functionNames = hostFunctionNames(flow, options);
  const functions = Object.freeze(
    Object.fromEntries(flow.steps.map((step, index) => [step.slug, functionNames[index]])),
  );
  const queued = Object.freeze({
    flow,
    queueMode: "step",
    routes,
    functions,
  }) as unknown as StepQueuedFlow<F>;
  registerRouting(queued, {
    flow,
    queueMode: "step",
    queueNames: Object.freeze(queueNames),
    functionNames: Object.freeze(functionNames),
  });
  return queued;
}

/** The worker function of every step of `flow`, in step order; checks `functions` first. */
function hostFunctionNames(flow: AnyFlow, options: StepQueuesOptions): string[] {
  const given = options?.functions ?? {};
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw new FlowDefinitionError(
      `Cannot add step queues to flow ${JSON.stringify(flow.slug)}: functions must be an object ` +
        `mapping step slugs to function names, got ${formatValue(given)}`,
      {
        flowSlug: flow.slug,
        stepSlug: undefined,
        reason: "invalid_option",
        option: "functions",
        value: given,
      },
    );
  }
  const slugs = flow.steps.map((step) => step.slug);
  for (const [stepSlug, name] of Object.entries(given)) {
    if (!slugs.includes(stepSlug)) {
      throw new FlowDefinitionError(
        `Cannot add step queues to flow ${JSON.stringify(flow.slug)}: functions names the step ` +
          `${JSON.stringify(stepSlug)}, which the flow does not have (its steps: ${
            slugs.map((slug) => JSON.stringify(slug)).join(", ")
          })`,
        {
          flowSlug: flow.slug,
          stepSlug,
          reason: "invalid_option",
          option: "functions",
          value: stepSlug,
        },
      );
    }
    if (
      name !== undefined &&
      (typeof name !== "string" || !HOST_FUNCTION_NAME.test(name) ||
        name.length > MAX_HOST_FUNCTION_NAME)
    ) {
      throw new FlowDefinitionError(
        `Cannot add step queues to flow ${JSON.stringify(flow.slug)}: the function of step ${
          JSON.stringify(stepSlug)
        } must be lowercase letters and digits in words joined by single "-", starting with a ` +
          `letter, at most ${MAX_HOST_FUNCTION_NAME} characters, got ${formatValue(name)}`,
        {
          flowSlug: flow.slug,
          stepSlug,
          reason: "invalid_option",
          option: "functions",
          value: name,
        },
      );
    }
  }
  const map = given as Readonly<Record<string, string | undefined>>;
  return slugs.map((slug) => map[slug] ?? workerFunctionName(flow.slug, slug));
}

/**
 * Tells whether `value` was returned by {@linkcode withStepQueues} (a copy or look-alike is not).
 *
 * @param value Any value.
 * @returns `true` for a genuine step-queued flow.
 *
 * @example Usage
 * ```ts
 * import { Flow, withStepQueues } from "@sluice/sluice";
 * import { isStepQueuedFlow } from "@sluice/sluice/admin";
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
