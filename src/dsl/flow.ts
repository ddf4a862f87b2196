/**
 * The `Flow` builder: a typed, immutable DAG of steps.
 *
 * @module
 */

import {
  type StepKind,
  validateFlowOptions,
  validateStep,
  validateSubflowStep,
  validateWaitStep,
} from "./_validate.ts";
import type { MaySkip, StepCondition, WhenPolicy } from "./condition.ts";
import type { StepContext } from "./context.ts";
import type { Json } from "./json.ts";
import type { StandardSchemaV1 } from "./standard_schema.ts";
import type { FlowLimitOptions } from "./limits.ts";
import type {
  ArrayOutputCheck,
  ArrayStepSlug,
  ElementOf,
  HandlerOutput,
  JsonOutputCheck,
  RootMapInputCheck,
  StepHandlerInput,
  StepOutputs,
  StepSignatures,
  WithStep,
} from "./signature.ts";
import type {
  FlowEventOptions,
  FlowRuntimeOptions,
  OnTimeout,
  SleepDue,
  StepDefinition,
  StepRuntimeOptions,
} from "./step_definition.ts";
import { registeredStartRef, type StartRef } from "./_start_refs.ts";

/** Key of the type-only property of a `SignalPayload`. */
declare const signalPayloadType: unique symbol;

/**
 * A type-only marker naming the payload type of a `.waitForSignal()` step (TypeScript cannot
 * infer the slugs while one type argument is given explicitly). Made by `signalPayload()`.
 *
 * @typeParam Payload The signal's payload.
 *
 * @example Usage
 * ```ts
 * import { type SignalPayload, signalPayload } from "@sluice/sluice";
 *
 * const payload: SignalPayload<{ approved: boolean }> = signalPayload<{ approved: boolean }>();
 * ```
 */
export interface SignalPayload<Payload> {
  /** Type-only. Never set at runtime. */
  readonly [signalPayloadType]?: Payload;
}

/**
 * Names the payload type of a `.waitForSignal()` step: `payload: signalPayload<Decision>()`.
 *
 * @typeParam Payload The signal's payload (what `sendSignal` sends).
 * @returns A marker that carries the type only.
 *
 * @example Usage
 * ```ts
 * import { Flow, signalPayload } from "@sluice/sluice";
 *
 * const flow = new Flow<{ id: string }>({ slug: "approval" })
 *   .step({ slug: "ask" }, (input) => ({ id: input.id }))
 *   .waitForSignal({
 *     slug: "decision",
 *     dependsOn: ["ask"],
 *     key: (deps) => `approval:${deps.ask.id}`,
 *     payload: signalPayload<{ approved: boolean }>(),
 *   });
 * ```
 */
export function signalPayload<Payload extends Json>(): SignalPayload<Payload> {
  return Object.freeze({});
}

/**
 * Options of `.sleep()`.
 *
 * @typeParam Slug The step slug.
 * @typeParam Dep The one step it depends on.
 *
 * @example Usage
 * ```ts
 * import type { SleepOptions } from "@sluice/sluice";
 *
 * const options: SleepOptions<"pause", "signup"> = { slug: "pause", dependsOn: ["signup"] };
 * ```
 */
export interface SleepOptions<Slug extends string = string, Dep extends string = string> {
  /** The step slug, unique within the flow. */
  readonly slug: Slug;
  /** The one single step whose completion starts the wait (its worker computes the due time). */
  readonly dependsOn: readonly [Dep];
}

/**
 * Options of `.waitForSignal()`.
 *
 * @typeParam Slug The step slug.
 * @typeParam Dep The one step it depends on.
 * @typeParam Deps What the key function receives.
 * @typeParam Payload The signal payload.
 * @typeParam Timeout What a timeout does.
 *
 * @example Usage
 * ```ts
 * import type { WaitForSignalOptions } from "@sluice/sluice";
 *
 * const options: WaitForSignalOptions<"ok", "ask", { ask: string }, boolean, "skip"> = {
 *   slug: "ok",
 *   dependsOn: ["ask"],
 *   key: (deps) => deps.ask,
 *   timeoutSeconds: 3600,
 *   onTimeout: "skip",
 * };
 * ```
 */
export interface WaitForSignalOptions<
  Slug extends string = string,
  Dep extends string = string,
  Deps = unknown,
  Payload = Json,
  Timeout extends OnTimeout = "fail",
> {
  /** The step slug, unique within the flow. */
  readonly slug: Slug;
  /** The one single step whose completion starts the wait (its worker computes the key). */
  readonly dependsOn: readonly [Dep];
  /** The signal key the step waits on (at most 1,000 characters), from its dependency's output. */
  readonly key: (deps: Deps) => string;
  /** The payload type (`signalPayload<T>()`); absent: any JSON value. */
  readonly payload?: SignalPayload<Payload>;
  /** Seconds until the wait times out (integer >= 1); absent: it waits until a signal comes. */
  readonly timeoutSeconds?: number;
  /** What a timeout does: fail the run, skip the step, or complete it with `{ value }`. @default {"fail"} */
  readonly onTimeout?: Timeout;
  /**
   * Whether a kept signal sent before the run started may complete the wait. By default only a
   * signal sent after the run started does, so one signal never completes a run that did not
   * exist when it was sent (docs/waits.md#signals).
   *
   * @default {false}
   */
  readonly acceptSignalsSentBeforeRun?: boolean;
}

/**
 * The output type of a signal wait: the payload, or its timeout value.
 *
 * @typeParam Payload The signal payload.
 * @typeParam Timeout The `onTimeout` option.
 *
 * @example Usage
 * ```ts
 * import type { SignalOutput } from "@sluice/sluice";
 *
 * const output: SignalOutput<{ approved: boolean }, { value: "timed_out" }> = "timed_out";
 * ```
 */
export type SignalOutput<Payload, Timeout extends OnTimeout> = Timeout extends
  { readonly value: infer Value } ? Payload | Value : Payload;

/**
 * What `.subflow()` and `.mapSubflow()` take as the child: a `Flow`, a `withStepQueues()` flow or
 * a `defineDeployedFlow()` flow (each wrapper holds the flow it wraps as `flow`). Anything else
 * is refused when the step is added.
 *
 * @example Usage
 * ```ts
 * import { Flow, type SubflowChild } from "@sluice/sluice";
 *
 * const child: SubflowChild = new Flow<{ n: number }>({ slug: "child" })
 *   .step({ slug: "x" }, (input) => input.n);
 * ```
 */
export type SubflowChild =
  | AnyFlow
  | { readonly flow: AnyFlow }
  | { readonly flow: { readonly flow: AnyFlow } };

/** The plain flow inside a child (unwrapping a deployed and a step-queued flow). */
type ChildFlow<C> = C extends AnyFlow ? C : C extends { readonly flow: infer W } ? ChildFlow<W>
: never;

/** The steps of a child flow. */
type ChildSteps<C> = ChildFlow<C> extends Flow<unknown, infer S> ? S : never;

/**
 * A child run's input type: the child flow's input.
 *
 * @typeParam C The child flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type SubflowInput } from "@sluice/sluice";
 *
 * const child = new Flow<{ n: number }>({ slug: "child" }).step({ slug: "x" }, (input) => input.n);
 * const input: SubflowInput<typeof child> = { n: 1 };
 * ```
 */
export type SubflowInput<C> = ChildFlow<C> extends Flow<infer I, StepSignatures> ? I : never;

/**
 * A child run's output type: the outputs of the child flow's leaf steps (those no other step
 * depends on), as a run of it outputs them (`FlowOutput`).
 *
 * @typeParam C The child flow (plain, step-queued or deployed).
 *
 * @example Usage
 * ```ts
 * import { Flow, type SubflowOutput } from "@sluice/sluice";
 *
 * const child = new Flow<{ n: number }>({ slug: "child" }).step({ slug: "x" }, (input) => input.n);
 * const output: SubflowOutput<typeof child> = { x: 1 };
 * ```
 */
export type SubflowOutput<C> = StepOutputs<
  ChildSteps<C>,
  Exclude<keyof ChildSteps<C>, ChildSteps<C>[keyof ChildSteps<C>]["deps"]>
>;

/**
 * Options of `.subflow()` and `.mapSubflow()`.
 *
 * @typeParam Slug The step slug.
 * @typeParam Dep The one step it depends on.
 * @typeParam Deps What the input function receives.
 * @typeParam Child The child flow.
 * @typeParam ChildInput What the input function returns: the child's input (`.subflow()`) or an
 * array of them (`.mapSubflow()`).
 *
 * @example Usage
 * ```ts
 * import { Flow, type SubflowOptions } from "@sluice/sluice";
 *
 * const provision = new Flow<{ account: string }>({ slug: "provision" })
 *   .step({ slug: "create" }, (input) => input.account);
 * const options: SubflowOptions<"setup", "load", { load: string }, typeof provision> = {
 *   slug: "setup",
 *   dependsOn: ["load"],
 *   flow: provision,
 *   input: (deps) => ({ account: deps.load }),
 * };
 * ```
 */
export interface SubflowOptions<
  Slug extends string = string,
  Dep extends string = string,
  Deps = unknown,
  Child extends SubflowChild = SubflowChild,
  ChildInput = SubflowInput<Child>,
> {
  /** The step slug, unique within the flow. */
  readonly slug: Slug;
  /** The one single step whose completion starts the children (its worker computes their input). */
  readonly dependsOn: readonly [Dep];
  /** The child flow: a `Flow`, a step-queued flow, or a deployed flow (started by its alias). */
  readonly flow: Child;
  /** The child run's input (`.mapSubflow()`: one input per child), from the dependency's output. */
  readonly input: (deps: Deps) => ChildInput;
}

/** Key of the type-only property that carries a flow's input and step types. */
declare const flowTypes: unique symbol;

/**
 * Options of `new Flow()`.
 *
 * @example Usage
 * ```ts
 * import type { FlowOptions } from "@sluice/sluice";
 *
 * const options: FlowOptions = { slug: "orders", maxAttempts: 5 };
 * ```
 */
export interface FlowOptions<StartInput = unknown, Input = StartInput>
  extends FlowRuntimeOptions, FlowEventOptions, FlowLimitOptions {
  /** The concrete flow slug (see the slug rules in the module docs of `slug.ts`). */
  readonly slug: string;
  /**
   * A Standard Schema validator of the run input (https://standardschema.dev: a zod, valibot or
   * arktype schema, or any object with `~standard.validate`). `startFlow` with this flow checks
   * the input before anything is written and stores the schema's value; a worker checks a run's
   * input again before a root step's handler runs (runs started by name, by SQL or by a schedule
   * were not checked). Refused: `InputValidationError`, listing each issue with its path. The
   * flow's input type is the schema's: what `startFlow` takes is its input type, what the steps
   * receive its output type. Not part of the flow's shape: changing it needs no new version.
   */
  readonly input?: StandardSchemaV1<StartInput, Input> | undefined;
}

/**
 * Condition options shared by `.step()`, `.array()` and `.map()`.
 *
 * @typeParam If The type of the `if` pattern.
 * @typeParam IfNot The type of the `ifNot` pattern.
 * @typeParam Unmet The `whenUnmet` policy.
 * @typeParam Exhausted The `whenExhausted` policy.
 *
 * @example Usage
 * ```ts
 * import type { StepConditionOptions } from "@sluice/sluice";
 *
 * const options: StepConditionOptions<{ paid: true }, undefined, "skip", "fail"> = {
 *   if: { paid: true },
 * };
 * ```
 */
export interface StepConditionOptions<
  If = unknown,
  IfNot = unknown,
  Unmet extends WhenPolicy = WhenPolicy,
  Exhausted extends WhenPolicy = WhenPolicy,
> {
  /** Run only when the input contains this pattern (`jsonb @>`). */
  readonly if?: If;
  /** Run only when the input does not contain this pattern. */
  readonly ifNot?: IfNot;
  /** What to do when the condition is not met. @default {"skip"} */
  readonly whenUnmet?: Unmet;
  /** What to do when the last attempt failed. @default {"fail"} */
  readonly whenExhausted?: Exhausted;
}

/**
 * Options of `.step()` and `.array()`.
 *
 * @typeParam Slug The step slug.
 * @typeParam Deps The dependency slugs.
 *
 * @example Usage
 * ```ts
 * import type { StepOptions } from "@sluice/sluice";
 *
 * const options: StepOptions<"ship", "pay"> = { slug: "ship", dependsOn: ["pay"], timeout: 30 };
 * ```
 */
export interface StepOptions<
  Slug extends string = string,
  Deps extends string = string,
  If = unknown,
  IfNot = unknown,
  Unmet extends WhenPolicy = WhenPolicy,
  Exhausted extends WhenPolicy = WhenPolicy,
> extends StepRuntimeOptions, StepConditionOptions<If, IfNot, Unmet, Exhausted> {
  /** The step slug, unique within the flow. */
  readonly slug: Slug;
  /** The steps whose outputs this step receives. Omitted or empty: a root step. */
  readonly dependsOn?: readonly Deps[];
}

/**
 * Options of `.map()` over a dependency's output array.
 *
 * @typeParam Slug The step slug.
 * @typeParam Source The dependency to map over.
 *
 * @example Usage
 * ```ts
 * import type { MapOptions } from "@sluice/sluice";
 *
 * const options: MapOptions<"resize", "list"> = { slug: "resize", array: "list" };
 * ```
 */
export interface MapOptions<
  Slug extends string = string,
  Source extends string = string,
  If = unknown,
  IfNot = unknown,
  Unmet extends WhenPolicy = WhenPolicy,
  Exhausted extends WhenPolicy = WhenPolicy,
> extends StepRuntimeOptions, StepConditionOptions<If, IfNot, Unmet, Exhausted> {
  /** The step slug, unique within the flow. */
  readonly slug: Slug;
  /** The dependency whose output array is mapped, one task per element. */
  readonly array: Source;
  /** May be given, but only as `[array]`. */
  readonly dependsOn?: readonly [NoInfer<Source>];
}

/**
 * Options of `.map()` over the flow input (which must be an array).
 *
 * @typeParam Slug The step slug.
 *
 * @example Usage
 * ```ts
 * import type { RootMapOptions } from "@sluice/sluice";
 *
 * const options: RootMapOptions<"each"> = { slug: "each", maxAttempts: 1 };
 * ```
 */
export interface RootMapOptions<
  Slug extends string = string,
  If = unknown,
  IfNot = unknown,
  Unmet extends WhenPolicy = WhenPolicy,
  Exhausted extends WhenPolicy = WhenPolicy,
> extends StepRuntimeOptions, StepConditionOptions<If, IfNot, Unmet, Exhausted> {
  /** The step slug, unique within the flow. */
  readonly slug: Slug;
  /** Absent: the map takes the flow input. */
  readonly array?: undefined;
  /** A map over the flow input has no dependencies. */
  readonly dependsOn?: readonly [];
}

/**
 * Any flow, whatever its input and steps.
 *
 * @example Usage
 * ```ts
 * import { type AnyFlow, Flow } from "@sluice/sluice";
 *
 * const flows: AnyFlow[] = [new Flow<{ id: number }>({ slug: "a" }), new Flow({ slug: "b" })];
 * ```
 */
export type AnyFlow = Flow<unknown, StepSignatures, unknown>;

/**
 * A typed, immutable workflow definition: a DAG of steps identified by a concrete slug.
 *
 * Every builder method validates its arguments synchronously (throwing `FlowDefinitionError`) and
 * returns a new frozen flow; the receiver is never changed, so step order is fixed by the chain.
 *
 * @typeParam Input The run input (a JSON value).
 * @typeParam Steps The signatures of the steps added so far.
 *
 * @example Usage
 * ```ts
 * import { Flow } from "@sluice/sluice";
 *
 * const orders = new Flow<{ orderId: number }>({ slug: "orders", maxAttempts: 5 })
 *   .step({ slug: "load" }, (input) => ({ id: input.orderId }))
 *   .array({ slug: "lines", dependsOn: ["load"] }, (deps) => [`${deps.load.id}-a`])
 *   .map({ slug: "reserve", array: "lines" }, (line) => ({ line, reserved: true }));
 * ```
 */
export class Flow<
  Input = Json,
  Steps extends StepSignatures = Record<never, never>,
  StartInput = Input,
> {
  /**
   * Type-only: carries `Input`, `Steps` and `StartInput` for the utility types. Never set at
   * runtime.
   */
  declare readonly [flowTypes]: {
    readonly input: Input;
    readonly steps: Steps;
    readonly startInput: StartInput;
  };

  /** The concrete flow slug. */
  readonly slug: string;
  /** Flow-level runtime options (task, event and limit options), as given. */
  readonly options: FlowRuntimeOptions & FlowEventOptions & FlowLimitOptions;
  /** The run input's Standard Schema validator (`input` of the options), if any. */
  readonly inputSchema: StandardSchemaV1<StartInput, Input> | undefined;
  #steps: readonly StepDefinition[] = Object.freeze([]);

  /**
   * Creates an empty flow. With an `input` schema the input types are the schema's.
   *
   * @param options The slug, the input schema and flow-level runtime options.
   * @throws {FlowDefinitionError} When the slug or an option is invalid (an `input` that is not a
   * Standard Schema included).
   */
  constructor(options: FlowOptions<StartInput, Input>) {
    const valid = validateFlowOptions(options);
    this.slug = valid.slug;
    this.options = valid.options;
    this.inputSchema = valid.inputSchema as StandardSchemaV1<StartInput, Input> | undefined;
    Object.freeze(this);
  }

  /**
   * The steps in definition order (frozen).
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1);
   * console.log(flow.steps.map((step) => step.slug)); // ["a"]
   * ```
   */
  get steps(): readonly StepDefinition[] {
    return this.#steps;
  }

  /**
   * Returns the definition of one step.
   *
   * @param slug The step slug.
   * @returns The step definition.
   * @throws {RangeError} When the flow has no such step.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow({ slug: "f" }).step({ slug: "a" }, () => 1);
   * console.log(flow.getStep("a").index); // 0
   * ```
   */
  getStep(slug: keyof Steps & string): StepDefinition {
    const step = this.#steps.find((candidate) => candidate.slug === slug);
    if (step === undefined) {
      throw new RangeError(
        `Cannot get step ${JSON.stringify(slug)} of flow ${
          JSON.stringify(this.slug)
        }: no such step (steps: ${this.#steps.map((candidate) => candidate.slug).join(", ")})`,
      );
    }
    return step;
  }

  /**
   * Adds a single step: one task per run.
   *
   * A root step (no `dependsOn`) receives the flow input; a dependent step receives an object
   * keyed by its dependencies holding their outputs, where a dependency that may be skipped is an
   * optional key. The handler's result must be JSON-compatible.
   *
   * @param options Slug, dependencies, condition and runtime options.
   * @param handler Computes the step output; may be async.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When a slug, dependency or option is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow<{ url: string }>({ slug: "scrape" })
   *   .step({ slug: "fetch" }, async (input) => (await fetch(input.url)).text())
   *   .step({ slug: "size", dependsOn: ["fetch"] }, (deps) => deps.fetch.length);
   * ```
   */
  step<
    const Slug extends string,
    H extends (
      input: StepHandlerInput<Input, Steps, Deps>,
      context: StepContext<Input, Slug>,
    ) => JsonOutputCheck<H>,
    const Deps extends keyof Steps & string = never,
    const If extends StepCondition<StepHandlerInput<Input, Steps, Deps>> | undefined = undefined,
    const IfNot extends StepCondition<StepHandlerInput<Input, Steps, Deps>> | undefined = undefined,
    const Unmet extends WhenPolicy = "skip",
    const Exhausted extends WhenPolicy = "fail",
  >(
    options: StepOptions<Slug, Deps, If, IfNot, Unmet, Exhausted>,
    handler: H,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: StepHandlerInput<Input, Steps, Deps>;
      output: HandlerOutput<H>;
      deps: Deps;
      skippable: MaySkip<If, IfNot, Unmet, Exhausted>;
    }>,
    StartInput
  > {
    return this.#add("step", options, handler);
  }

  /**
   * Adds a single step whose handler returns an array, typically the source of a `.map()`.
   * Takes the same options and input as `.step()`.
   *
   * @param options Slug, dependencies, condition and runtime options.
   * @param handler Computes the output array; may be async.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When a slug, dependency or option is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow<{ ids: number[] }>({ slug: "batch" })
   *   .array({ slug: "pages" }, (input) => input.ids.map((id) => `/items/${id}`));
   * ```
   */
  array<
    const Slug extends string,
    H extends (
      input: StepHandlerInput<Input, Steps, Deps>,
      context: StepContext<Input, Slug>,
    ) => ArrayOutputCheck<H>,
    const Deps extends keyof Steps & string = never,
    const If extends StepCondition<StepHandlerInput<Input, Steps, Deps>> | undefined = undefined,
    const IfNot extends StepCondition<StepHandlerInput<Input, Steps, Deps>> | undefined = undefined,
    const Unmet extends WhenPolicy = "skip",
    const Exhausted extends WhenPolicy = "fail",
  >(
    options: StepOptions<Slug, Deps, If, IfNot, Unmet, Exhausted>,
    handler: H,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: StepHandlerInput<Input, Steps, Deps>;
      output: HandlerOutput<H>;
      deps: Deps;
      skippable: MaySkip<If, IfNot, Unmet, Exhausted>;
    }>,
    StartInput
  > {
    return this.#add("array", options, handler);
  }

  /**
   * Adds a map step over a dependency's output array: one task per element, and the step's
   * output is the array of handler results in element order.
   *
   * @param options Slug, `array` (the dependency to map), condition and runtime options.
   * @param handler Processes one element; may be async.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When a slug, the source or an option is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow<{ text: string }>({ slug: "words" })
   *   .array({ slug: "split" }, (input) => input.text.split(" "))
   *   .map({ slug: "upper", array: "split" }, (word) => word.toUpperCase());
   * ```
   */
  map<
    const Slug extends string,
    H extends (
      item: ElementOf<Steps[Source]["output"]>,
      context: StepContext<Input, Slug>,
    ) => JsonOutputCheck<H>,
    const Source extends ArrayStepSlug<Steps> & string,
    const If extends StepCondition<StepOutputs<Steps, Source>> | undefined = undefined,
    const IfNot extends StepCondition<StepOutputs<Steps, Source>> | undefined = undefined,
    const Unmet extends WhenPolicy = "skip",
    const Exhausted extends WhenPolicy = "fail",
  >(
    options: MapOptions<Slug, Source, If, IfNot, Unmet, Exhausted>,
    handler: H,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: ElementOf<Steps[Source]["output"]>;
      output: HandlerOutput<H>[];
      deps: Source;
      skippable: MaySkip<If, IfNot, Unmet, Exhausted>;
    }>,
    StartInput
  >;
  /**
   * Adds a map step over the flow input, which must be an array: one task per element.
   *
   * @param options Slug, condition and runtime options (no `array`, no dependencies).
   * @param handler Processes one element; may be async.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When the slug or an option is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow<string[]>({ slug: "urls" })
   *   .map({ slug: "length" }, (url) => url.length);
   * ```
   */
  map<
    const Slug extends string,
    H extends (item: ElementOf<Input>, context: StepContext<Input, Slug>) => JsonOutputCheck<H>,
    const If extends StepCondition<Input> | undefined = undefined,
    const IfNot extends StepCondition<Input> | undefined = undefined,
    const Unmet extends WhenPolicy = "skip",
    const Exhausted extends WhenPolicy = "fail",
  >(
    options: RootMapOptions<Slug, If, IfNot, Unmet, Exhausted> & RootMapInputCheck<Input>,
    handler: H,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: ElementOf<Input>;
      output: HandlerOutput<H>[];
      deps: never;
      skippable: MaySkip<If, IfNot, Unmet, Exhausted>;
    }>,
    StartInput
  >;
  map(
    options: MapOptions | RootMapOptions,
    handler: (item: never, context: never) => unknown,
  ): Flow<Input, StepSignatures, StartInput> {
    return this.#add("map", options, handler);
  }

  /**
   * Adds a durable sleep: the step waits in the database, holding no task and no worker, until
   * its due time, then completes with that due time (an ISO 8601 instant, as `toISOString()`
   * writes it). It depends on exactly one single step; the worker that completes that step calls
   * `due` with its output. A due time already past completes the sleep at once. If the
   * dependency is skipped, so is the sleep.
   *
   * @param options Slug and the one dependency.
   * @param due The due time: a `Date`, or `{ seconds }` from when the wait starts.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When the slug or the dependency is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const flow = new Flow<{ email: string }>({ slug: "reminder" })
   *   .step({ slug: "welcome" }, (input) => ({ sent: input.email }))
   *   .sleep({ slug: "three_days", dependsOn: ["welcome"] }, () => ({ seconds: 3 * 86400 }))
   *   .step({ slug: "remind", dependsOn: ["three_days"] }, (deps) => `woke at ${deps.three_days}`);
   * ```
   */
  sleep<const Slug extends string, const Dep extends keyof Steps & string>(
    options: SleepOptions<Slug, Dep>,
    due: (deps: { [K in Dep]: Steps[K]["output"] }) => SleepDue,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: { [K in Dep]: Steps[K]["output"] };
      output: string;
      deps: Dep;
      skippable: Steps[Dep]["skippable"];
    }>,
    StartInput
  > {
    return this.#addWait("sleep", options, due);
  }

  /**
   * Adds a durable wait for an external signal: the step waits in the database, holding no task
   * and no worker, until `sendSignal` (SQL `sluice.send_signal`) sends a signal with its key, then
   * completes with the signal's payload. It depends on exactly one single step; the worker that
   * completes that step calls `key` with its output. A signal sent before the wait starts is kept
   * and completes it as soon as it starts. With `timeoutSeconds`, `onTimeout` says what a timeout
   * does. If the dependency is skipped, so is the wait.
   *
   * @param options Slug, the one dependency, the key function, payload type and timeout.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When the slug, dependency or an option is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow, signalPayload } from "@sluice/sluice";
   *
   * const flow = new Flow<{ refundId: string }>({ slug: "refund" })
   *   .step({ slug: "request" }, (input) => ({ id: input.refundId }))
   *   .waitForSignal({
   *     slug: "decision",
   *     dependsOn: ["request"],
   *     key: (deps) => `refund:${deps.request.id}`,
   *     payload: signalPayload<{ approved: boolean }>(),
   *     timeoutSeconds: 48 * 3600,
   *     onTimeout: { value: { approved: false } },
   *   })
   *   .step({ slug: "settle", dependsOn: ["decision"] }, (deps) => deps.decision.approved);
   * ```
   */
  waitForSignal<
    const Slug extends string,
    const Dep extends keyof Steps & string,
    Payload = Json,
    const Timeout extends OnTimeout = "fail",
  >(
    options: WaitForSignalOptions<
      Slug,
      Dep,
      { [K in Dep]: Steps[K]["output"] },
      Payload,
      Timeout
    >,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: { [K in Dep]: Steps[K]["output"] };
      output: SignalOutput<Payload, Timeout>;
      deps: Dep;
      skippable: Steps[Dep]["skippable"] | ("skip" extends Timeout ? true : false);
    }>,
    StartInput
  > {
    return this.#addWait("signal", options, undefined);
  }

  /**
   * Adds a subflow: the step starts one run of another flow (the child) and waits in the
   * database, holding no task and no worker, until the child ends; its output is the child run's
   * output. It depends on exactly one single step; the worker that completes that step calls
   * `input` with its output to get the child's input. A child started by a deployed flow's alias
   * runs the alias's current version. If the dependency is skipped, so is the subflow.
   *
   * @param options Slug, the one dependency, the child flow and the input function.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When the slug, dependency, child flow or input is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const provision = new Flow<{ account: string }>({ slug: "provision" })
   *   .step({ slug: "create" }, (input) => ({ id: `acct_${input.account}` }));
   * const onboard = new Flow<{ name: string }>({ slug: "onboard" })
   *   .step({ slug: "load" }, (input) => input.name)
   *   .subflow({
   *     slug: "account",
   *     dependsOn: ["load"],
   *     flow: provision,
   *     input: (deps) => ({ account: deps.load }),
   *   })
   *   .step({ slug: "welcome", dependsOn: ["account"] }, (deps) => deps.account.create.id);
   * ```
   */
  subflow<
    const Slug extends string,
    const Dep extends keyof Steps & string,
    const Child extends SubflowChild,
  >(
    options: SubflowOptions<Slug, Dep, { [K in Dep]: Steps[K]["output"] }, Child>,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: { [K in Dep]: Steps[K]["output"] };
      output: SubflowOutput<Child>;
      deps: Dep;
      skippable: Steps[Dep]["skippable"];
    }>,
    StartInput
  > {
    return this.#addSubflow(false, options);
  }

  /**
   * Adds a map subflow: the step starts one child run per element of the array `input` returns
   * and waits, like `.subflow()`, until every child ends; its output is the children's outputs
   * in element order. An empty array completes the step at once with `[]`.
   *
   * @param options Slug, the one dependency, the child flow and the inputs function.
   * @returns A new flow with the step appended.
   * @throws {FlowDefinitionError} When the slug, dependency, child flow or input is invalid.
   *
   * @example Usage
   * ```ts
   * import { Flow } from "@sluice/sluice";
   *
   * const invite = new Flow<{ email: string }>({ slug: "invite" })
   *   .step({ slug: "send" }, (input) => ({ sent: input.email }));
   * const onboard = new Flow<{ seats: string[] }>({ slug: "onboard" })
   *   .step({ slug: "seats" }, (input) => input.seats)
   *   .mapSubflow({
   *     slug: "invites",
   *     dependsOn: ["seats"],
   *     flow: invite,
   *     input: (deps) => deps.seats.map((email) => ({ email })),
   *   });
   * ```
   */
  mapSubflow<
    const Slug extends string,
    const Dep extends keyof Steps & string,
    const Child extends SubflowChild,
  >(
    options: SubflowOptions<
      Slug,
      Dep,
      { [K in Dep]: Steps[K]["output"] },
      Child,
      readonly SubflowInput<Child>[]
    >,
  ): Flow<
    Input,
    WithStep<Steps, Slug, {
      input: { [K in Dep]: Steps[K]["output"] };
      output: SubflowOutput<Child>[];
      deps: Dep;
      skippable: Steps[Dep]["skippable"];
    }>,
    StartInput
  > {
    return this.#addSubflow(true, options);
  }

  #addSubflow<Next extends StepSignatures>(
    map: boolean,
    options: unknown,
  ): Flow<Input, Next, StartInput> {
    const flow = (options as { flow?: unknown } | null)?.flow;
    // A bare string would be taken as an alias: refused, since its type cannot be known.
    const child: StartRef | TypeError = typeof flow === "string"
      ? new TypeError(`flow ${JSON.stringify(flow)} is a string`)
      : flow instanceof Flow
      ? { ref: flow.slug, concrete: true }
      : registeredStartRef(flow) ?? new TypeError("flow is not a flow");
    const step = validateSubflowStep(this.slug, this.#steps, map, options, child);
    const next = new Flow<Input, Next, StartInput>({
      slug: this.slug,
      ...this.options,
      input: this.inputSchema,
    });
    next.#steps = Object.freeze([...this.#steps, step]);
    return next;
  }

  #addWait<Next extends StepSignatures>(
    kind: "sleep" | "signal",
    options: unknown,
    due: unknown,
  ): Flow<Input, Next, StartInput> {
    const step = validateWaitStep(this.slug, this.#steps, kind, options, due);
    const next = new Flow<Input, Next, StartInput>({
      slug: this.slug,
      ...this.options,
      input: this.inputSchema,
    });
    next.#steps = Object.freeze([...this.#steps, step]);
    return next;
  }

  #add<Next extends StepSignatures>(
    kind: StepKind,
    options: unknown,
    handler: unknown,
  ): Flow<Input, Next, StartInput> {
    const step = validateStep(this.slug, this.#steps, kind, options, handler);
    const next = new Flow<Input, Next, StartInput>({
      slug: this.slug,
      ...this.options,
      input: this.inputSchema,
    });
    next.#steps = Object.freeze([...this.#steps, step]);
    return next;
  }
}
