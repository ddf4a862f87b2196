/**
 * The attempts a worker's handlers are running, by fencing token: the heartbeat sends them to
 * `sluice.heartbeat_worker` and aborts the handlers of those the database says are no longer live
 * (their run was cancelled, or the task was requeued, retried or finished meanwhile).
 *
 * @module
 */

import type { AbortedAttempt, RunningAttempt } from "../db/worker_queries.ts";

/** One running handler: its attempt and how to abort it. */
interface Entry {
  readonly attempt: RunningAttempt;
  readonly abort: (reason: DOMException) => void;
}

function key(attempt: RunningAttempt): string {
  return `${attempt.runId}/${attempt.stepSlug}/${attempt.taskIndex}/${attempt.attempt}`;
}

/** The `signal.reason` of a handler whose attempt is no longer live. */
export function abortReason(aborted: AbortedAttempt): DOMException {
  const task = `step "${aborted.stepSlug}" task ${aborted.taskIndex} attempt ${aborted.attempt}`;
  if (aborted.runStatus === "cancelled") {
    return new DOMException(
      `Run ${aborted.runId} was cancelled${
        aborted.cancelReason === null ? "" : `: ${aborted.cancelReason}`
      } (${task})`,
      "AbortError",
    );
  }
  if (aborted.runStatus === null || aborted.taskStatus === null) {
    return new DOMException(`Run ${aborted.runId} no longer exists (${task})`, "AbortError");
  }
  return new DOMException(
    `The attempt is no longer live: the task is ${aborted.taskStatus} and run ${aborted.runId} ` +
      `is ${aborted.runStatus} (${task})`,
    "AbortError",
  );
}

/** The running attempts of one worker. */
export class RunningAttempts {
  readonly #entries = new Map<string, Entry>();

  /** Records a running attempt; the returned function forgets it (call it once it settled). */
  add(attempt: RunningAttempt, abort: (reason: DOMException) => void): () => void {
    const id = key(attempt);
    const entry = { attempt, abort };
    this.#entries.set(id, entry);
    return () => {
      if (this.#entries.get(id) === entry) this.#entries.delete(id);
    };
  }

  /** The attempts running now. */
  list(): RunningAttempt[] {
    return [...this.#entries.values()].map((entry) => entry.attempt);
  }

  /** Aborts the handlers of these attempts that still run; returns how many it aborted. */
  abort(attempts: readonly AbortedAttempt[]): number {
    let aborted = 0;
    for (const attempt of attempts) {
      const entry = this.#entries.get(key(attempt));
      if (entry === undefined) continue;
      this.#entries.delete(key(attempt));
      entry.abort(abortReason(attempt));
      aborted++;
    }
    return aborted;
  }
}
