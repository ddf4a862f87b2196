/**
 * A `clearImmediate` that always cancels, for postgres.js under Deno 2.5.
 *
 * Deno 2.5 runs `setImmediate` callbacks on its timer queue. One turn of its event loop takes the
 * finished I/O and the due timers out of their queues together, then runs the I/O callbacks (socket
 * reads and their promise continuations) and only then the timers it took. `clearImmediate` from
 * those I/O callbacks cannot reach an immediate that was already taken (deno_core's `cancelTimer`
 * only remembers cancellations made while the timers run), so the cleared immediate still runs.
 *
 * postgres.js 3.4.9 relies on the cancellation. It buffers a write shorter than 1 KiB behind
 * `setImmediate(nextWrite)`; a longer write (or one with a callback) on the same connection sends
 * the buffer itself, clears the immediate and empties the buffer (`chunk = null`). When that longer
 * write comes from a query's continuation in the turn in which the immediate is due — an answer
 * arrived and the code awaiting it sent its next statement at once — the immediate runs anyway and
 * writes `null`: `TypeError: May not write null values to stream`, thrown from a timer where no
 * `try`/`catch` reaches it, so the process dies. sluice's per-task statements are longer than 1 KiB
 * on purpose (`sentAtOnce`), so a busy worker meets this case.
 *
 * The remedy wraps the global `setImmediate`/`clearImmediate` once per process: scheduling stays
 * Deno's own (same timing, same `Immediate` handles) and a callback whose handle was cleared returns
 * without running. For other code in the process this only adds what Node guarantees: a cleared
 * immediate never runs. Code that kept the original functions before sluice was imported, or takes
 * them from `node:timers`, keeps Deno's behaviour; postgres.js reads the globals at each call.
 * The wrapper also knows which immediates are pending, so that {@linkcode runPendingImmediates}
 * can run the driver's buffered writes before the driver handles a close (driver_socket.ts).
 *
 * To remove it when Deno fixes the gap: drop the `installCancellableImmediate()` call in
 * src/db/driver/postgres.ts and run tests/db/cancellable_immediate_test.ts and
 * tests/worker/buffered_write_test.ts on the new Deno; if both pass, delete this module.
 *
 * @module
 */

type ImmediateCallback = (...args: unknown[]) => void;

/** The Node globals that postgres.js calls; Deno's type of `globalThis` does not declare them. */
interface ImmediateGlobals {
  setImmediate(callback: ImmediateCallback, ...args: unknown[]): unknown;
  clearImmediate(handle: unknown): void;
}

const INSTALLED = Symbol.for("sluice.cancellableImmediate");

/** An immediate scheduled through the wrapper that has neither run nor been cleared. */
interface PendingImmediate {
  readonly callback: ImmediateCallback;
  readonly args: unknown[];
}

/** The pending immediates by handle, on the globals: shared by every copy of sluice. */
type Registry = Map<unknown, PendingImmediate>;

/**
 * Makes `clearImmediate` reliable for the whole process (see the module documentation for why).
 * Idempotent, also across several copies of sluice in one process; does nothing where the runtime
 * has no `setImmediate`.
 */
export function installCancellableImmediate(): void {
  const globals = globalThis as unknown as ImmediateGlobals & { [INSTALLED]?: Registry };
  if (
    globals[INSTALLED] || typeof globals.setImmediate !== "function" ||
    typeof globals.clearImmediate !== "function"
  ) return;
  const set = globals.setImmediate;
  const clear = globals.clearImmediate;
  const pending: Registry = new Map();
  globals.setImmediate = function setImmediate(callback, ...args) {
    // A callback that is not a function is Deno's to handle, as without sluice.
    if (typeof callback !== "function") return set(callback, ...args);
    const handle = set(() => {
      if (pending.delete(handle)) Reflect.apply(callback, globalThis, args);
    });
    pending.set(handle, { callback, args });
    return handle;
  };
  globals.clearImmediate = function clearImmediate(handle) {
    pending.delete(handle);
    clear(handle);
  };
  globals[INSTALLED] = pending;
}

/**
 * Runs now, in scheduling order, the pending immediates whose callback `select` picks; each then
 * counts as run and does not run again. For src/db/driver/driver_socket.ts, which flushes postgres.js's
 * buffered writes before the driver handles a close.
 *
 * @param select Picks the callbacks to run.
 */
export function runPendingImmediates(select: (callback: ImmediateCallback) => boolean): void {
  const pending = (globalThis as unknown as { [INSTALLED]?: Registry })[INSTALLED];
  if (pending === undefined) return;
  for (const [handle, { callback, args }] of [...pending]) {
    if (!select(callback) || !pending.delete(handle)) continue;
    (globalThis as unknown as ImmediateGlobals).clearImmediate(handle);
    Reflect.apply(callback, globalThis, args);
  }
}
