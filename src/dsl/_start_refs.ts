/**
 * What each wrapper that a constructor of this folder built (`withStepQueues`,
 * `defineDeployedFlow`) is started by: kept apart from routing.ts so that flow.ts can resolve a
 * subflow's child without importing the module that imports it.
 *
 * @module
 */

/** A child's start reference: an alias (resolved when each run starts) or a concrete slug. */
export interface StartRef {
  readonly ref: string;
  readonly concrete: boolean;
}

const refs = new WeakMap<object, StartRef>();

/** Records what `wrapper` is started by (called by routing.ts's registerRouting). */
export function registerStartRef(wrapper: object, ref: StartRef): void {
  refs.set(wrapper, Object.freeze({ ...ref }));
}

/** What a registered wrapper is started by, or `undefined` for anything else. */
export function registeredStartRef(value: unknown): StartRef | undefined {
  return typeof value === "object" && value !== null ? refs.get(value) : undefined;
}
