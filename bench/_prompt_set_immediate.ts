/**
 * A prompt `setImmediate` for postgres.js under Deno.
 *
 * postgres.js defers every small write (< 1 KiB) with `setImmediate`, to coalesce the messages of
 * one tick. Deno 2.5 runs `setImmediate` on its millisecond timer, so each deferral costs about
 * 1.2 ms of idle time, and a parameterized query with `prepare: false` (Parse/Describe, then
 * Bind/Execute once the parameter types are known) pays it twice: ~3.3 ms per round trip on
 * loopback where the raw socket needs ~0.13 ms. That would make a benchmark of the SQL core
 * measure the client's timer. A microtask still runs after everything written in the same
 * synchronous stretch, so writes are still coalesced; the round trip drops to ~0.4 ms.
 *
 * @module
 */

type ImmediateCallback = (...args: unknown[]) => void;

/** The Node globals npm packages see; Deno's own type of `globalThis` does not declare them. */
interface ImmediateGlobals {
  setImmediate(callback: ImmediateCallback, ...args: unknown[]): unknown;
  clearImmediate(handle: unknown): void;
}

/**
 * Replaces `globalThis.setImmediate` / `clearImmediate` with a microtask-based version until the
 * returned handle is disposed (which restores the originals).
 *
 * @example
 * ```ts ignore
 * import { usePromptSetImmediate } from "./_prompt_set_immediate.ts";
 * using _prompt = usePromptSetImmediate();
 * ```
 */
export function usePromptSetImmediate(): Disposable {
  const globals = globalThis as unknown as ImmediateGlobals;
  const original = { set: globals.setImmediate, clear: globals.clearImmediate };
  const ours = new WeakSet<object>();
  const cancelled = new WeakSet<object>();
  const set = (callback: ImmediateCallback, ...args: unknown[]) => {
    const handle = {};
    ours.add(handle);
    queueMicrotask(() => {
      if (!cancelled.has(handle)) callback(...args);
    });
    return handle;
  };
  const clear = (handle: unknown) => {
    if (typeof handle === "object" && handle !== null && ours.has(handle)) cancelled.add(handle);
    // Set before the swap: the original's to cancel.
    else original.clear(handle);
  };
  globals.setImmediate = set;
  globals.clearImmediate = clear;
  return {
    [Symbol.dispose]() {
      globals.setImmediate = original.set;
      globals.clearImmediate = original.clear;
    },
  };
}
