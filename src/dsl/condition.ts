/**
 * Step conditions: `if` / `ifNot` containment patterns and the `whenUnmet` / `whenExhausted`
 * policies.
 *
 * @module
 */

/**
 * What happens to a step when its condition is not met (`whenUnmet`) or when its last attempt
 * failed (`whenExhausted`):
 *
 * - `fail`: the run fails.
 * - `skip`: the step is skipped; its dependents still run and see its key missing.
 * - `skip-cascade`: the step and every step that depends on it, directly or not, are skipped.
 *
 * @example Usage
 * ```ts
 * import type { WhenPolicy } from "@sluice/sluice";
 *
 * const policy: WhenPolicy = "skip-cascade";
 * ```
 */
export type WhenPolicy = "fail" | "skip" | "skip-cascade";

/**
 * A JSON containment pattern (Postgres `jsonb @>`) for a value of type `T`: every key optional,
 * arrays match when each pattern element is contained in some element of the value.
 *
 * @typeParam T The type of the value the pattern is tested against.
 *
 * @example Usage
 * ```ts
 * import type { ContainmentPattern } from "@sluice/sluice";
 *
 * type Order = { status: "new" | "paid"; tags: string[] };
 * const pattern: ContainmentPattern<Order> = { status: "paid", tags: ["vip"] };
 * ```
 */
export type ContainmentPattern<T> = T extends readonly (infer E)[]
  ? readonly ContainmentPattern<E>[]
  : T extends object ? { readonly [K in keyof T]?: ContainmentPattern<T[K]> }
  : T;

/**
 * The pattern an `if` / `ifNot` option accepts: a containment pattern for the object a step's
 * condition is tested against. Root steps test the flow input, dependent steps the object
 * `{ [dependency]: output }`. Only object subjects can be tested; for other subjects this is
 * `never`.
 *
 * @typeParam Subject The value the condition is tested against.
 *
 * @example Usage
 * ```ts
 * import type { StepCondition } from "@sluice/sluice";
 *
 * const condition: StepCondition<{ fetch: { ok: boolean } }> = { fetch: { ok: true } };
 * ```
 */
export type StepCondition<Subject> = Subject extends readonly unknown[] ? never
  : Subject extends object ? { readonly [K in keyof Subject]?: ContainmentPattern<Subject[K]> }
  : never;

/**
 * `true` when a step with these options may end up skipped while its dependents still run:
 * `whenExhausted` allows `skip`, or the step has a condition and `whenUnmet` allows `skip`.
 * `skip-cascade` does not count: it skips the dependents as well.
 *
 * @typeParam If The type of the `if` option, `undefined` when absent.
 * @typeParam IfNot The type of the `ifNot` option, `undefined` when absent.
 * @typeParam Unmet The `whenUnmet` policy.
 * @typeParam Exhausted The `whenExhausted` policy.
 *
 * @example Usage
 * ```ts
 * import type { MaySkip } from "@sluice/sluice";
 *
 * const skippable: MaySkip<{ paid: true }, undefined, "skip", "fail"> = true;
 * ```
 */
export type MaySkip<If, IfNot, Unmet extends WhenPolicy, Exhausted extends WhenPolicy> =
  "skip" extends Exhausted ? true
    : [If, IfNot] extends [undefined, undefined] ? false
    : "skip" extends Unmet ? true
    : false;
