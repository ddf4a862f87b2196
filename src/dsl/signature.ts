/**
 * Type-level bookkeeping of the `Flow` builder: what is known about each step, and the checks
 * that turn mistakes into compile errors. These types appear in the builder signatures; flows
 * rarely need them directly (see `types.ts` for the utility types).
 *
 * @module
 */

import type { JsonCompatible } from "./json.ts";

/**
 * What the type system knows about one step: the handler's input, the step's output, the slugs
 * it depends on, and whether it may be skipped while its dependents run.
 *
 * @example Usage
 * ```ts
 * import type { StepSignature } from "@sluice/sluice";
 *
 * type Fetch = StepSignature & { input: { url: string }; output: string; deps: never };
 * ```
 */
export interface StepSignature {
  /** What the handler receives (one element for a map step). */
  readonly input: unknown;
  /** What the step produces (an array of handler outputs for a map step). */
  readonly output: unknown;
  /** The slugs of its dependencies (`never` for a root step). */
  readonly deps: string;
  /** Whether dependents may see it missing (see `MaySkip`). */
  readonly skippable: boolean;
}

/**
 * The step signatures of a flow, keyed by step slug.
 *
 * @example Usage
 * ```ts
 * import type { StepSignatures } from "@sluice/sluice";
 *
 * type None = StepSignatures & Record<never, never>;
 * ```
 */
export type StepSignatures = Record<string, StepSignature>;

/**
 * Flattens an intersection of object types into one object type, keeping `?` modifiers. The
 * trailing `& NonNullable<unknown>` (that is, `& {}`) makes editors show the resolved object
 * instead of the alias.
 *
 * @typeParam T The object type to flatten.
 *
 * @example Usage
 * ```ts
 * import type { Simplify } from "@sluice/sluice";
 *
 * const value: Simplify<{ a: number } & { b?: string }> = { a: 1 }; // { a: number; b?: string }
 * ```
 */
export type Simplify<T> = { [K in keyof T]: T[K] } & NonNullable<unknown>;

/**
 * An object keyed by the given steps, holding their outputs; skippable steps are optional keys.
 * This is what a dependent handler receives and what a run outputs (for its leaf steps).
 *
 * @typeParam Steps The flow's step signatures.
 * @typeParam Slugs The steps to include.
 *
 * @example Usage
 * ```ts
 * import type { StepOutputs } from "@sluice/sluice";
 *
 * type Steps = {
 *   a: { input: null; output: number; deps: never; skippable: false };
 *   b: { input: null; output: string; deps: never; skippable: true };
 * };
 * const outputs: StepOutputs<Steps, "a" | "b"> = { a: 1 };
 * ```
 */
export type StepOutputs<Steps extends StepSignatures, Slugs extends keyof Steps> = Simplify<
  & { [K in Slugs as true extends Steps[K]["skippable"] ? never : K]: Steps[K]["output"] }
  & { [K in Slugs as true extends Steps[K]["skippable"] ? K : never]?: Steps[K]["output"] }
>;

/**
 * What the handler of a `.step()` or `.array()` receives: the flow input for a root step (no
 * dependencies), else the outputs of its dependencies.
 *
 * @typeParam Input The flow input.
 * @typeParam Steps The flow's step signatures.
 * @typeParam Deps The step's dependencies (`never` for a root step).
 *
 * @example Usage
 * ```ts
 * import type { StepHandlerInput } from "@sluice/sluice";
 *
 * type Steps = { a: { input: null; output: number; deps: never; skippable: false } };
 * const root: StepHandlerInput<{ id: number }, Steps, never> = { id: 1 };
 * const dependent: StepHandlerInput<{ id: number }, Steps, "a"> = { a: 1 };
 * ```
 */
export type StepHandlerInput<Input, Steps extends StepSignatures, Deps extends keyof Steps> =
  [Deps] extends [never] ? Input : StepOutputs<Steps, Deps>;

/**
 * The element type of an array type (`never` for anything else).
 *
 * @typeParam T The array type.
 *
 * @example Usage
 * ```ts
 * import type { ElementOf } from "@sluice/sluice";
 *
 * const item: ElementOf<readonly string[]> = "one";
 * ```
 */
export type ElementOf<T> = T extends readonly (infer E)[] ? E : never;

/**
 * The slugs of steps whose output is an array: what `.map({ array })` accepts.
 *
 * @typeParam Steps The flow's step signatures.
 *
 * @example Usage
 * ```ts
 * import type { ArrayStepSlug } from "@sluice/sluice";
 *
 * type Steps = {
 *   list: { input: null; output: string[]; deps: never; skippable: false };
 *   count: { input: null; output: number; deps: never; skippable: false };
 * };
 * const source: ArrayStepSlug<Steps> = "list";
 * ```
 */
export type ArrayStepSlug<Steps extends StepSignatures> = {
  [K in keyof Steps]: Steps[K]["output"] extends readonly unknown[] ? K : never;
}[keyof Steps];

/**
 * A flow's step signatures with one more step (displayed resolved, see {@linkcode Simplify}).
 *
 * @typeParam Steps The signatures so far.
 * @typeParam Slug The new step's slug.
 * @typeParam Signature The new step's signature.
 *
 * @example Usage
 * ```ts
 * import type { WithStep } from "@sluice/sluice";
 *
 * type Steps = WithStep<
 *   Record<never, never>,
 *   "a",
 *   { input: null; output: number; deps: never; skippable: false }
 * >;
 * const output: Steps["a"]["output"] = 1;
 * ```
 */
export type WithStep<
  Steps extends StepSignatures,
  Slug extends string,
  Signature extends StepSignature,
> = Simplify<{ [K in keyof Steps | Slug]: K extends Slug ? Signature : Steps[K] }>;

/**
 * The output type of a handler: its awaited return type.
 *
 * @typeParam H The handler's function type.
 *
 * @example Usage
 * ```ts
 * import type { HandlerOutput } from "@sluice/sluice";
 *
 * const output: HandlerOutput<() => Promise<{ ok: boolean }>> = { ok: true };
 * ```
 */
export type HandlerOutput<H> = H extends (...args: never) => infer R ? Awaited<R> : never;

/**
 * The return-type bound of a handler `H`: `unknown` when its output is JSON-compatible, else an
 * object whose property name is the error message the compiler shows. Used as the F-bound
 * `H extends (input, context) => JsonOutputCheck<H>`, which keeps `H` (and so unions of returned
 * shapes) inferred exactly.
 *
 * @typeParam H The handler's function type.
 *
 * @example Usage
 * ```ts
 * import type { JsonOutputCheck } from "@sluice/sluice";
 *
 * const ok: JsonOutputCheck<() => { at: string }> = "anything: the bound is unknown";
 * ```
 */
export type JsonOutputCheck<H> = [HandlerOutput<H>] extends [JsonCompatible<HandlerOutput<H>>]
  ? unknown
  : { readonly "a handler must return a JSON-compatible value": never };

/**
 * Like {@linkcode JsonOutputCheck}, and the output must be an array (for `.array()`).
 *
 * @typeParam H The handler's function type.
 *
 * @example Usage
 * ```ts
 * import type { ArrayOutputCheck } from "@sluice/sluice";
 *
 * const ok: ArrayOutputCheck<() => string[]> = "anything: the bound is unknown";
 * ```
 */
export type ArrayOutputCheck<H> = [HandlerOutput<H>] extends [readonly unknown[]]
  ? JsonOutputCheck<H>
  : { readonly "an array step handler must return an array": never };

/**
 * Blocks a `.map()` without `array` at compile time when the flow input is not an array: then it
 * requires a property whose name is the error message the compiler shows.
 *
 * @typeParam Input The flow input.
 *
 * @example Usage
 * ```ts
 * import type { RootMapInputCheck } from "@sluice/sluice";
 *
 * const ok: RootMapInputCheck<string[]> = "anything: no requirement";
 * ```
 */
export type RootMapInputCheck<Input> = [Input] extends [readonly unknown[]] ? unknown
  : { readonly "a map without `array` maps the flow input, which must be an array": never };
