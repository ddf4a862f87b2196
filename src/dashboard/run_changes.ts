/**
 * When the run page's live parts should be read again: the one source of the dashboard's
 * server-sent events.
 *
 * @module
 */

/** Options of {@linkcode runChanges}. */
export interface RunChangesOptions {
  /** Ends the iteration. */
  readonly signal: AbortSignal;
  /**
   * Milliseconds between two reads.
   *
   * @default {500}
   */
  readonly intervalMs?: number;
}

/**
 * Yields once at once, then whenever the run may have changed, until `signal` aborts. It polls:
 * a tick every `intervalMs`; the reader compares what it reads with what it sent.
 *
 * @example Usage
 * ```ts ignore
 * import { runChanges } from "./run_changes.ts";
 *
 * for await (const _ of runChanges({ signal })) console.log(await readRunView(sql, runId));
 * ```
 */
export async function* runChanges(options: RunChangesOptions): AsyncGenerator<void> {
  const { signal } = options;
  const intervalMs = options.intervalMs ?? 500;
  while (!signal.aborted) {
    yield;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, intervalMs);
      signal.addEventListener("abort", done, { once: true });
      function done() {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      }
    });
  }
}
