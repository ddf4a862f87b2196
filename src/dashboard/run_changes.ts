/**
 * When the run page's live parts should be read again: the one source of the dashboard's
 * server-sent events.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { watchRun } from "../client/watch_run.ts";

/** Options of {@linkcode runChanges}. */
export interface RunChangesOptions {
  /** Ends the iteration. */
  readonly signal: AbortSignal;
  /**
   * Milliseconds without an event after which it yields anyway: run events cover every step and
   * run transition, not a retried task's attempts and error, and this bounds how stale those get.
   *
   * @default {2000}
   */
  readonly intervalMs?: number;
}

/**
 * Yields once at once, then whenever the run may have changed, until `signal` aborts or the
 * caller stops: on each of the run's events (`watchRun`: LISTEN/NOTIFY, itself polling where
 * LISTEN is unavailable), and after `intervalMs` without one. The caller reads the run again and
 * compares it with what it sent; several changes between two reads make one.
 *
 * @example Usage
 * ```ts ignore
 * import { runChanges } from "./run_changes.ts";
 *
 * for await (const _ of runChanges(sql, runId, { signal })) {
 *   console.log(await readRunView(sql, runId));
 * }
 * ```
 */
export async function* runChanges(
  sql: Sql,
  runId: string,
  options: RunChangesOptions,
): AsyncGenerator<void> {
  const intervalMs = options.intervalMs ?? 2000;
  const stop = new AbortController();
  const signal = AbortSignal.any([options.signal, stop.signal]);
  let changed = true;
  let wake = () => {};
  const events = (async () => {
    try {
      for await (const _ of watchRun(sql, runId, { signal })) {
        changed = true;
        wake();
      }
    } catch {
      // Aborted, or the events are unreadable: the interval still drives the reads.
    }
  })();
  signal.addEventListener("abort", () => wake(), { once: true });
  try {
    while (!signal.aborted) {
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => wake(), intervalMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      if (signal.aborted) break;
      changed = false;
      yield;
    }
  } finally {
    stop.abort();
    await events;
  }
}
