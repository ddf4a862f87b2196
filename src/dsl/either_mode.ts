/**
 * `eitherMode()`: the functions that take a deployable flow and its options are overloaded per
 * queue mode, so that the compiler ties a plain flow to plain options and a step-queued flow to
 * options whose `stepSlug` is one of its steps. Code that holds either pair, already checked by
 * those overloads, calls the function through this one view of its implementation signature.
 * Not part of the public API.
 *
 * @module
 */

import type { DeployableFlow } from "./types.ts";

/**
 * `fn` seen through its implementation signature: any deployable flow with options `O`.
 *
 * @typeParam O The options of either mode.
 * @typeParam R What `fn` returns (the same for every overload).
 * @param fn An overloaded function of a deployable flow and its options.
 * @returns `fn` itself.
 */
export function eitherMode<O, R>(
  fn: (flow: never, options: never) => R,
): (flow: DeployableFlow, options: O) => R {
  return fn as (flow: DeployableFlow, options: O) => R;
}
