/**
 * `extractDefinition()`: the complete ordered structural definition of a flow, as the JSON that
 * `sluice.ensure_flow_compiled` takes (docs/internals/contracts.md §1).
 *
 * @module
 */

import { type QueueMode, routingOf } from "./routing.ts";
import type { ConcurrencyLimit, RateLimit } from "./concurrency.ts";
import type { WhenPolicy } from "./condition.ts";
import { FlowDefinitionError } from "./errors.ts";
import type { JsonObject } from "./json.ts";
import type { StepDefinition, StepType } from "./step_definition.ts";
import type { DeployableFlow } from "./types.ts";

/**
 * Flow-level runtime options in a definition; `null` means the SQL default.
 *
 * @example Usage
 * ```ts
 * import type { FlowDefinitionOptions } from "@sluice/sluice/admin";
 *
 * const options: FlowDefinitionOptions = {
 *   max_attempts: 3,
 *   base_delay: null,
 *   timeout: 60,
 *   events: null,
 *   progress_interval: null,
 *   max_input_bytes: null,
 *   max_output_bytes: null,
 *   max_map_tasks: null,
 * };
 * ```
 */
export interface FlowDefinitionOptions extends TaskDefinitionOptions {
  /** Whether runs send live events; `null`: the default (on). */
  readonly events: boolean | null;
  /** Least seconds between two progress events of a step; `null`: the default (1). */
  readonly progress_interval: number | null;
  /** The largest run input in bytes of JSON; `null`: the default (16 MiB). */
  readonly max_input_bytes: number | null;
  /** The largest step output in bytes of JSON; `null`: the default (16 MiB). */
  readonly max_output_bytes: number | null;
  /** The most tasks of one map step; `null`: the default (10,000). */
  readonly max_map_tasks: number | null;
}

/**
 * The task options a flow sets and a step may override; `null` means the default (flow) or the
 * flow's (step).
 *
 * @example Usage
 * ```ts
 * import type { TaskDefinitionOptions } from "@sluice/sluice/admin";
 *
 * const options: TaskDefinitionOptions = { max_attempts: 3, base_delay: null, timeout: 60 };
 * ```
 */
export interface TaskDefinitionOptions {
  /** Attempts per task; `null`: the default. */
  readonly max_attempts: number | null;
  /** Retry backoff base in seconds; `null`: the default. */
  readonly base_delay: number | null;
  /** Task timeout in seconds; `null`: the default. */
  readonly timeout: number | null;
}

/**
 * Step-level runtime options in a definition; `null` means "inherit the flow's".
 *
 * @example Usage
 * ```ts
 * import type { StepDefinitionOptions } from "@sluice/sluice/admin";
 *
 * const options: StepDefinitionOptions = {
 *   max_attempts: null,
 *   base_delay: null,
 *   timeout: 30,
 *   start_delay: null,
 * };
 * ```
 */
export interface StepDefinitionOptions extends TaskDefinitionOptions {
  /** Seconds before the first attempt; `null`: none. */
  readonly start_delay: number | null;
  /** The most tasks per concurrency key at once; absent or `null`: no limit. */
  readonly concurrency_limit?: number | null;
  /**
   * The path into the run input the key of the step's limits is read from; absent or `null`:
   * none.
   */
  readonly concurrency_key?: readonly string[] | null;
  /** The most first attempts per key in a window; absent or `null`: no rate limit. */
  readonly rate_limit?: number | null;
  /** The rate limit's window, in seconds; absent or `null` without a rate limit. */
  readonly rate_period?: number | null;
}

/**
 * One step of a definition.
 *
 * @example Usage
 * ```ts
 * import type { FlowDefinitionStep } from "@sluice/sluice/admin";
 *
 * const step: FlowDefinitionStep = {
 *   step_slug: "fetch",
 *   step_index: 0,
 *   step_type: "single",
 *   deps: [],
 *   map_source: null,
 *   required_input_pattern: null,
 *   forbidden_input_pattern: null,
 *   when_unmet: "skip",
 *   when_exhausted: "fail",
 *   options: { max_attempts: null, base_delay: null, timeout: null, start_delay: null },
 * };
 * ```
 */
export interface FlowDefinitionStep {
  /** The step slug. */
  readonly step_slug: string;
  /** Zero-based; equals the position in `steps`. */
  readonly step_index: number;
  /** `single` or `map`, or `sleep`, `signal` or `subflow` for a wait step. */
  readonly step_type: StepType;
  /** Sorted ascending by code point. */
  readonly deps: readonly string[];
  /** A map step's source dependency; `null` for single steps and maps over the run input. */
  readonly map_source: string | null;
  /** The `if` pattern, or `null`. */
  readonly required_input_pattern: JsonObject | null;
  /** The `ifNot` pattern, or `null`. */
  readonly forbidden_input_pattern: JsonObject | null;
  /** What happens when the condition is not met. */
  readonly when_unmet: WhenPolicy;
  /** What happens when the last attempt failed. */
  readonly when_exhausted: WhenPolicy;
  /** Step runtime options (not part of the shape). */
  readonly options: StepDefinitionOptions;
  /**
   * A signal wait's timeout, `{}` for a sleep, a subflow's child, `null` for a handler step (part
   * of the shape).
   */
  readonly wait?: WaitDefinitionOptions | null;
}

/**
 * A wait step's options in the definition: a signal wait's timeout (none for a sleep).
 *
 * @example Usage
 * ```ts
 * import type { WaitDefinitionOptions } from "@sluice/sluice/admin";
 *
 * const wait: WaitDefinitionOptions = { timeout_seconds: 60, on_timeout: "skip", timeout_value: null };
 * ```
 */
export interface WaitDefinitionOptions {
  /** Seconds until the wait times out; `null`: none. */
  readonly timeout_seconds?: number | null;
  /** What a timeout does. */
  readonly on_timeout?: "fail" | "skip" | "value";
  /** The output of a wait that timed out with `on_timeout: "value"`. */
  readonly timeout_value?: unknown;
  /** Present (`true`) only when a signal sent before the run started may complete the wait. */
  readonly accept_signals_sent_before_run?: true;
  /** A subflow's child: what it is started by, and whether one child runs per element. */
  readonly subflow?: SubflowDefinitionOptions;
}

/**
 * A subflow step's child in the definition.
 *
 * @example Usage
 * ```ts
 * import type { SubflowDefinitionOptions } from "@sluice/sluice/admin";
 *
 * const child: SubflowDefinitionOptions = { flow: "provision", by: "alias", map: false };
 * ```
 */
export interface SubflowDefinitionOptions {
  /** The child's alias or concrete flow slug. */
  readonly flow: string;
  /** `alias`: resolved when each child starts; `slug`: that concrete flow. */
  readonly by: "alias" | "slug";
  /** Whether one child runs per element of the input array. */
  readonly map: boolean;
}

/**
 * The queue of one step.
 *
 * @example Usage
 * ```ts
 * import type { FlowDefinitionRoute } from "@sluice/sluice/admin";
 *
 * const route: FlowDefinitionRoute = { step_slug: "fetch", queue_name: "orders" };
 * ```
 */
export interface FlowDefinitionRoute {
  /** The step slug. */
  readonly step_slug: string;
  /** The queue its tasks are sent to. */
  readonly queue_name: string;
}

/**
 * The definition JSON sent to `sluice.ensure_flow_compiled` at worker startup. Shape: steps in
 * order with type, sorted deps, map source, conditions and policies, plus the queue mode and
 * routes. `options` (flow and step) are runtime options and never take part in shape comparison.
 *
 * @example Usage
 * ```ts
 * import type { FlowDefinition } from "@sluice/sluice/admin";
 * import { Flow } from "@sluice/sluice";
 * import { extractDefinition } from "@sluice/sluice/admin";
 *
 * const flow = new Flow({ slug: "orders", timeout: 30 }).step({ slug: "fetch" }, () => 1);
 * const definition: FlowDefinition = extractDefinition(flow);
 * console.log(definition.options.timeout); // 30
 * ```
 */
export interface FlowDefinition {
  /** The concrete flow slug. */
  readonly flow_slug: string;
  /** How the routes were derived. */
  readonly queue_mode: QueueMode;
  /** Flow runtime options (not part of the shape). */
  readonly options: FlowDefinitionOptions;
  /** The steps in definition order. */
  readonly steps: readonly FlowDefinitionStep[];
  /** One per step, in step order. */
  readonly routes: readonly FlowDefinitionRoute[];
}

function waitOptions(step: StepDefinition): WaitDefinitionOptions | null {
  if (step.wait === null) return null;
  if (step.wait.kind === "sleep") return {};
  if (step.wait.kind === "subflow") {
    return {
      subflow: {
        flow: step.wait.flow,
        by: step.wait.byAlias ? "alias" : "slug",
        map: step.wait.map,
      },
    };
  }
  const onTimeout = step.wait.onTimeout;
  return {
    timeout_seconds: step.wait.timeoutSeconds,
    on_timeout: typeof onTimeout === "string" ? onTimeout : "value",
    timeout_value: typeof onTimeout === "string" ? null : structuredClone(onTimeout.value),
    // Only when set: every other flow's definition (and shape) stays what it was.
    ...(step.wait.acceptSignalsSentBeforeRun ? { accept_signals_sent_before_run: true } : {}),
  };
}

/**
 * Extracts the definition JSON of a plain or step-queued flow. Pure and synchronous: the worker
 * sends the result to `sluice.ensure_flow_compiled` at startup, tests compare it directly.
 *
 * @param flow A `Flow`, or a flow returned by `withStepQueues()`.
 * @returns A fresh definition object (safe to mutate or serialize).
 * @throws {FlowDefinitionError} When the flow has no steps.
 * @throws {TypeError} When `flow` is neither (a look-alike wrapper is rejected).
 * @throws {QueueNameError} When a plain flow's slug is too long to be a queue name.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 * import { extractDefinition } from "@sluice/sluice/admin";
 *
 * const flow = new Flow({ slug: "orders" }).step({ slug: "fetch" }, () => 1);
 * console.log(JSON.stringify(extractDefinition(flow).routes));
 * // [{"step_slug":"fetch","queue_name":"orders"}]
 * ```
 */
export function extractDefinition(flow: DeployableFlow): FlowDefinition {
  const { flow: plain, queueMode, queueNames } = routingOf(flow);
  if (plain.steps.length === 0) {
    throw new FlowDefinitionError(
      `Cannot extract the definition of flow ${JSON.stringify(plain.slug)}: the flow has no steps`,
      {
        flowSlug: plain.slug,
        stepSlug: undefined,
        reason: "empty_flow",
        option: "steps",
        value: [],
      },
    );
  }
  return {
    flow_slug: plain.slug,
    queue_mode: queueMode,
    options: {
      max_attempts: plain.options.maxAttempts ?? null,
      base_delay: plain.options.baseDelay ?? null,
      timeout: plain.options.timeout ?? null,
      events: plain.options.events ?? null,
      progress_interval: plain.options.progressInterval ?? null,
      max_input_bytes: plain.options.maxInputBytes ?? null,
      max_output_bytes: plain.options.maxOutputBytes ?? null,
      max_map_tasks: plain.options.maxMapTasks ?? null,
    },
    steps: plain.steps.map((step) => ({
      step_slug: step.slug,
      step_index: step.index,
      step_type: step.type,
      deps: [...step.dependsOn],
      map_source: step.mapSource,
      required_input_pattern: step.if === null ? null : structuredClone(step.if),
      forbidden_input_pattern: step.ifNot === null ? null : structuredClone(step.ifNot),
      when_unmet: step.whenUnmet,
      when_exhausted: step.whenExhausted,
      options: {
        max_attempts: step.options.maxAttempts ?? null,
        base_delay: step.options.baseDelay ?? null,
        timeout: step.options.timeout ?? null,
        start_delay: step.options.startDelay ?? null,
        ...limitOptions(step.options.concurrency, step.options.rateLimit),
      },
      wait: waitOptions(step),
    })),
    routes: plain.steps.map((step, index) => ({
      step_slug: step.slug,
      queue_name: queueNames[index],
    })),
  };
}

// Only a limited step carries the limit fields: an unlimited step's definition is as it was.
function limitOptions(
  concurrency: ConcurrencyLimit | undefined,
  rateLimit: RateLimit | undefined,
): Pick<
  StepDefinitionOptions,
  "concurrency_limit" | "concurrency_key" | "rate_limit" | "rate_period"
> {
  if (concurrency === undefined && rateLimit === undefined) return {};
  const key = concurrency?.key ?? rateLimit?.key;
  return {
    concurrency_limit: concurrency?.limit ?? null,
    concurrency_key: key === undefined ? null : key.split("."),
    rate_limit: rateLimit?.limit ?? null,
    rate_period: rateLimit?.period ?? null,
  };
}

/**
 * The steps a worker serves, in definition order: every step but the waits (`sleep`, `signal`,
 * `subflow`),
 * which hold no task and no message (docs/waits.md). Codegen generates a worker function for
 * each of them in a step-queued flow, and only they are valid `stepSlug`s of a step worker.
 *
 * @param definition A flow definition.
 * @returns The served step slugs.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 * import { extractDefinition, servedStepSlugs } from "@sluice/sluice/admin";
 *
 * const flow = new Flow<{ id: string }>({ slug: "refund" })
 *   .step({ slug: "ask" }, (input) => input.id)
 *   .sleep({ slug: "pause", dependsOn: ["ask"] }, () => ({ seconds: 60 }));
 * servedStepSlugs(extractDefinition(flow)); // ["ask"]
 * ```
 */
export function servedStepSlugs(definition: FlowDefinition): string[] {
  return definition.steps
    .filter((step) =>
      step.step_type !== "sleep" && step.step_type !== "signal" && step.step_type !== "subflow"
    )
    .map((step) => step.step_slug);
}
