/**
 * The runtime record of one step, as stored on a `Flow`.
 *
 * @module
 */

import type { ConcurrencyLimit, RateLimit } from "./concurrency.ts";
import type { StepContext } from "./context.ts";
import type { WhenPolicy } from "./condition.ts";
import type { JsonObject } from "./json.ts";

/**
 * A step's type in the definition: `single` runs one task (`.step()` and `.array()`), `map` runs
 * one task per array element (`.map()`); `sleep` (`.sleep()`) and `signal` (`.waitForSignal()`)
 * are durable waits, which hold no task (docs/waits.md); `subflow` (`.subflow()`,
 * `.mapSubflow()`) waits the same way for child runs of another flow (docs/subflows.md).
 *
 * @example Usage
 * ```ts
 * import type { StepType } from "@sluice/sluice";
 *
 * const type: StepType = "map";
 * ```
 */
export type StepType = "single" | "map" | "sleep" | "signal" | "subflow";

/**
 * When a sleep is due: an instant, or a number of seconds from when the wait starts.
 *
 * @example Usage
 * ```ts
 * import type { SleepDue } from "@sluice/sluice";
 *
 * const inThreeDays: SleepDue = { seconds: 3 * 24 * 3600 };
 * ```
 */
export type SleepDue = Date | { readonly seconds: number };

/**
 * What a signal wait does when its timeout passes first: fail the run, skip the step (dependents
 * run without it), or complete it with a value.
 *
 * @example Usage
 * ```ts
 * import type { OnTimeout } from "@sluice/sluice";
 *
 * const onTimeout: OnTimeout = { value: { approved: false } };
 * ```
 */
export type OnTimeout = "fail" | "skip" | { readonly value: unknown };

/**
 * The wait of a `sleep`, `signal` or `subflow` step: the function the worker that completes the
 * wait's one dependency calls with that dependency's output (as `{ [dependency]: output }`) to
 * learn the due time, the signal key or the child runs' input, and a signal wait's timeout.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 *
 * const flow = new Flow({ slug: "f" })
 *   .step({ slug: "a" }, () => ({ id: 1 }))
 *   .waitForSignal({ slug: "b", dependsOn: ["a"], key: (deps) => `order:${deps.a.id}` });
 * console.log(flow.getStep("b").wait?.kind); // "signal"
 * ```
 */
export type WaitDefinition =
  | { readonly kind: "sleep"; readonly due: (deps: never) => SleepDue }
  | {
    readonly kind: "signal";
    readonly key: (deps: never) => string;
    /** Seconds until the timeout, or `null`: no timeout. */
    readonly timeoutSeconds: number | null;
    readonly onTimeout: OnTimeout;
    /** Whether a signal sent before the run started may complete the wait. */
    readonly acceptSignalsSentBeforeRun: boolean;
  }
  | {
    readonly kind: "subflow";
    /** What the child runs are started by: the child's alias, or its concrete slug. */
    readonly flow: string;
    /** Whether `flow` is an alias (a deployed flow), resolved when each child starts. */
    readonly byAlias: boolean;
    /** Whether the step starts one child per element of the array `input` returns. */
    readonly map: boolean;
    /** The child run's input (a map: the array of the children's inputs). */
    readonly input: (deps: never) => unknown;
    /** The child flow as given (what the testing kit starts workers of). */
    readonly child: object;
  };

/**
 * A handler as the worker calls it. The builder methods type handlers exactly; the stored form
 * takes whatever the database hands over.
 *
 * @example Usage
 * ```ts
 * import type { StepHandler } from "@sluice/sluice";
 *
 * const handler: StepHandler = (input) => ({ received: input !== undefined });
 * ```
 */
export type StepHandler = (input: unknown, context: StepContext) => unknown;

/**
 * Runtime options of a flow: retries, backoff and timeout, in whole counts and seconds. Absent
 * means the SQL default (3 attempts, 1 s base delay, 60 s timeout).
 *
 * @example Usage
 * ```ts
 * import type { FlowRuntimeOptions } from "@sluice/sluice";
 *
 * const options: FlowRuntimeOptions = { maxAttempts: 5, timeout: 120 };
 * ```
 */
export interface FlowRuntimeOptions {
  /** Attempts per task, including the first (integer >= 1). @default {3} */
  readonly maxAttempts?: number;
  /** Base of the exponential retry backoff, in seconds (integer >= 1). @default {1} */
  readonly baseDelay?: number;
  /** Task timeout in seconds (integer >= 1). @default {60} */
  readonly timeout?: number;
}

/**
 * Live run events of a flow (docs/events.md): runtime options, so a restart of the flow's workers
 * changes them without a new flow version.
 *
 * @example Usage
 * ```ts
 * import type { FlowEventOptions } from "@sluice/sluice";
 *
 * const options: FlowEventOptions = { events: true, progressInterval: 5 };
 * ```
 */
export interface FlowEventOptions {
  /** Whether runs of the flow send live events (NOTIFY, and Supabase Realtime where installed). @default {true} */
  readonly events?: boolean;
  /**
   * The least time between two progress events (tasks done of total) of one step, in whole
   * seconds (integer >= 0; 0: one for every completion that leaves tasks to do).
   *
   * @default {1}
   */
  readonly progressInterval?: number;
}

/**
 * Runtime options of a step. Absent means "inherit the flow's".
 *
 * @example Usage
 * ```ts
 * import type { StepRuntimeOptions } from "@sluice/sluice";
 *
 * const options: StepRuntimeOptions = { timeout: 300, startDelay: 3600 };
 * ```
 */
export interface StepRuntimeOptions extends FlowRuntimeOptions {
  /** Seconds to wait before the step's first attempt (integer >= 0). @default {0} */
  readonly startDelay?: number;
  /**
   * At most `limit` tasks of the step per key at once; the others wait in the database
   * (docs/flow_control.md#concurrency-limits).
   *
   * @default {no limit}
   */
  readonly concurrency?: ConcurrencyLimit;
  /**
   * At most `limit` first attempts of the step's tasks per key in any `period` seconds; the
   * others wait in the database (docs/flow_control.md#rate-limits).
   *
   * @default {no limit}
   */
  readonly rateLimit?: RateLimit;
}

/**
 * One step of a `Flow`: its place in the DAG, its conditions and options, and its
 * handler. Frozen.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 *
 * const flow = new Flow<{ n: number }>({ slug: "math" })
 *   .step({ slug: "double" }, (input) => input.n * 2);
 * const step = flow.getStep("double");
 * console.log(step.index, step.type, step.dependsOn); // 0 "single" []
 * ```
 */
export interface StepDefinition {
  /** The step slug. */
  readonly slug: string;
  /** Zero-based position in the flow. */
  readonly index: number;
  /** `single`, `map`, or a wait (`sleep`, `signal`, `subflow`). */
  readonly type: StepType;
  /** Dependency slugs, sorted ascending. */
  readonly dependsOn: readonly string[];
  /** For a map step: the dependency it maps over, or `null` when it maps the flow input. */
  readonly mapSource: string | null;
  /** The required input pattern (`if`), or `null`. */
  readonly if: JsonObject | null;
  /** The forbidden input pattern (`ifNot`), or `null`. */
  readonly ifNot: JsonObject | null;
  /** What happens when the condition is not met. */
  readonly whenUnmet: WhenPolicy;
  /** What happens when the last attempt failed. */
  readonly whenExhausted: WhenPolicy;
  /** Runtime options given on the step. */
  readonly options: StepRuntimeOptions;
  /** The handler (a wait step's refuses to run: a wait holds no task). */
  readonly handler: StepHandler;
  /** A wait step's wait, `null` for a handler step. */
  readonly wait: WaitDefinition | null;
}
