/**
 * `RunEventFeed`: turns a run's replayed state and its live events, from any transport, into one
 * ordered sequence without gaps or repeats that ends at the run's terminal event. Shared by
 * `watchRun()` (NOTIFY) and the browser client (Supabase Realtime); not part of the public API.
 *
 * Events are state transitions, so a repeat is recognised by the state it leads to: an event is
 * passed on only when it moves the run, or one of its steps, forward (a step: started, or waiting
 * for a wait step, then progress with more done, then one terminal status; the run: started,
 * then one terminal status; a subflow child, by its step and index: child:started, then one end).
 * A replay therefore fills exactly what a subscriber missed, wherever it starts.
 *
 * @module
 */

import { UnknownRunError } from "./unknown_run_error.ts";
import { isTerminalRunEvent, type RunEventPayload } from "./run_event.ts";

/** Reads a run's state as events (full outputs); `null` when there is no such run. */
export type ReplayRun = () => Promise<readonly RunEventPayload[] | null>;

/** How far one step has come. */
interface StepProgress {
  /** 1: started or waiting, 2: finished (completed, failed, skipped or cancelled). */
  stage: number;
  done: number;
}

/** A run's live events, merged with replays of its state. */
export class RunEventFeed {
  readonly #runId: string;
  readonly #replay: ReplayRun;
  readonly #live: RunEventPayload[] = [];
  #resync = true;
  #held = false;
  #error: { reason: unknown } | undefined;
  #wake: (() => void) | undefined;
  #started = false;
  #finished = false;
  /** The retry count of the last `run:retried` passed on. */
  #retries = 0;
  readonly #steps = new Map<string, StepProgress>();
  /** How far each subflow child has come, by step and index: 1 started, 2 ended. */
  readonly #children = new Map<string, number>();

  /**
   * @param runId The run (for error messages).
   * @param replay Reads the run's state as events.
   */
  constructor(runId: string, replay: ReplayRun) {
    this.#runId = runId;
    this.#replay = replay;
  }

  /** A live event arrived. */
  push(event: RunEventPayload): void {
    this.#live.push(event);
    this.#wake?.();
  }

  /** The live events may have gaps (a reconnect, a poll tick): read the state again. */
  resync(): void {
    this.#resync = true;
    this.#held = false;
    this.#wake?.();
  }

  /**
   * The transport lost its connection: live events that arrive from now on wait for the next
   * {@linkcode resync} (which the transport calls once it listens again), so that the state read
   * then goes first and no live event is passed on ahead of what it follows.
   */
  interrupt(): void {
    this.#held = true;
  }

  /** The transport failed for good: the iteration rejects with `reason`. */
  fail(reason: unknown): void {
    this.#error ??= { reason };
    this.#wake?.();
  }

  /**
   * The events, in order: the replay first, then live ones, each transition once, ending after
   * the terminal event.
   *
   * @param signal Ends the iteration with the signal's reason.
   */
  async *events(signal?: AbortSignal): AsyncGenerator<RunEventPayload, void, undefined> {
    for (;;) {
      signal?.throwIfAborted();
      if (this.#error !== undefined) throw this.#error.reason;
      if (this.#resync) {
        this.#resync = false;
        for (const event of await this.#readReplay()) {
          if (this.#accept(event)) yield event;
          if (this.#finished) return;
        }
        continue;
      }
      const event = this.#held ? undefined : this.#live.shift();
      if (event !== undefined) {
        const undo = this.#undoFor(event);
        if (this.#accept(event)) {
          const filled = event.omitted === undefined ? event : await this.#fill(event);
          if (filled === undefined) {
            // The state moved past the event before its left-out fields could be read (a cancel
            // that a retry followed at once): the state stands for it, from a replay.
            undo();
            this.#resync = true;
            continue;
          }
          yield filled;
        }
        if (this.#finished) return;
        continue;
      }
      await new Promise<void>((resolve) => {
        const onAbort = () => resolve();
        this.#wake = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        signal?.addEventListener("abort", onAbort, { once: true });
      });
      this.#wake = undefined;
    }
  }

  async #readReplay(): Promise<readonly RunEventPayload[]> {
    const events = await this.#replay();
    if (events === null) throw new UnknownRunError(this.#runId);
    return events;
  }

  /**
   * Reads the fields a transport left out from the run's state; `undefined` when the state no
   * longer has the event (the run went on past it).
   */
  async #fill(event: RunEventPayload): Promise<RunEventPayload | undefined> {
    // A child's event is one of its step's: its index tells it apart.
    const full = (await this.#readReplay()).find((candidate) =>
      candidate.type === event.type && candidate.stepSlug === event.stepSlug &&
      candidate.index === event.index
    );
    if (full === undefined) return undefined;
    const { omitted, ...rest } = event;
    const filled: Record<string, unknown> = { ...rest };
    for (const field of omitted!) filled[field] = full[field];
    return filled as RunEventPayload;
  }

  /** Puts back what {@linkcode #accept} of `event` records, as it is now. */
  #undoFor(event: RunEventPayload): () => void {
    const started = this.#started;
    const finished = this.#finished;
    const retries = this.#retries;
    const slug = String(event.stepSlug);
    const step = this.#steps.get(slug);
    const kept = step === undefined ? undefined : { ...step };
    const key = childKey(event);
    const child = this.#children.get(key);
    return () => {
      this.#started = started;
      this.#finished = finished;
      this.#retries = retries;
      if (kept === undefined) this.#steps.delete(slug);
      else this.#steps.set(slug, kept);
      if (child === undefined) this.#children.delete(key);
      else this.#children.set(key, child);
    };
  }

  /** Whether the event moves the run forward; records it when it does. */
  #accept(event: RunEventPayload): boolean {
    if (this.#finished) return false;
    if (event.type === "run:started") {
      if (this.#started) return false;
      this.#started = true;
      return true;
    }
    if (event.type === "run:retried") {
      const count = Number(event.retryCount);
      if (count <= this.#retries) return false;
      this.#retries = count;
      return true;
    }
    if (isTerminalRunEvent(event)) {
      this.#started = true;
      this.#finished = true;
      return true;
    }
    const slug = String(event.stepSlug);
    if (event.type.startsWith("child:")) {
      const key = childKey(event);
      const stage = event.type === "child:started" ? 1 : 2;
      if ((this.#children.get(key) ?? 0) >= stage) return false;
      this.#children.set(key, stage);
      return true;
    }
    const step = this.#steps.get(slug) ?? { stage: 0, done: 0 };
    this.#steps.set(slug, step);
    switch (event.type) {
      // A wait step's step:waiting is its start: it has no step:started (no task), and its
      // release (step:completed, or step:skipped on a timeout) still follows.
      case "step:started":
      case "step:waiting":
        if (step.stage >= 1) return false;
        step.stage = 1;
        return true;
      case "step:progress": {
        const done = Number(event.done);
        if (step.stage !== 1 || done <= step.done) return false;
        step.done = done;
        return true;
      }
      default:
        if (step.stage >= 2) return false;
        step.stage = 2;
        return true;
    }
  }
}

/** The key of a subflow child's event: its step and index. */
function childKey(event: RunEventPayload): string {
  return `${String(event.stepSlug)}\u0000${Number(event.index)}`;
}
