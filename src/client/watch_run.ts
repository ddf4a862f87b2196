/**
 * `watchRun()`: a run's live events as an async iterator, for server-side code.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { readRunEvents, type RunEventsRow } from "../db/event_queries.ts";
import { type ChannelSubscription, subscribeChannel } from "../db/run_listener.ts";
import type { DeployableFlow } from "../dsl/types.ts";
import {
  runChannel,
  type RunEvent,
  type RunEventPayload,
  type RunHandle,
} from "../events/run_event.ts";
import { RunEventFeed } from "../events/run_event_feed.ts";
import { positive } from "./_positive.ts";
import { assertUuid } from "../dsl/uuid.ts";
import { isTransientDatabaseError } from "../db/transient_error.ts";

/**
 * Options of {@linkcode watchRun}.
 *
 * @typeParam F The run's flow type (`never`: untyped events).
 *
 * @example Usage
 * ```ts
 * import type { WatchRunOptions } from "@sluice/sluice";
 *
 * const options: WatchRunOptions = { resyncIntervalMs: 10_000 };
 * ```
 */
export interface WatchRunOptions<F extends DeployableFlow = never> {
  /** The run's flow: types the events (only its type is used). */
  readonly flow?: F;
  /** Ends the iteration: the next step of the iterator rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * Listen for the run's NOTIFY events. With `false`, or where LISTEN fails (e.g. behind a
   * transaction pooler), the run's state is polled instead.
   *
   * @default {true}
   */
  readonly listen?: boolean;
  /**
   * While listening, how often the run's state is read anyway (and LISTEN re-issued): NOTIFY
   * delivers at most once, so this bounds how long a lost event can go unnoticed.
   *
   * @default {5000}
   */
  readonly resyncIntervalMs?: number;
  /**
   * When polling (no LISTEN, or the flow's events are off), the first interval between reads;
   * it grows by half after each read up to `maxPollIntervalMs`.
   *
   * @default {50}
   */
  readonly pollIntervalMs?: number;
  /**
   * When polling, the longest interval between reads.
   *
   * @default {250}
   */
  readonly maxPollIntervalMs?: number;
}

/**
 * Watches a run: yields its events (docs/events.md), typed by its flow, and ends after the
 * terminal one (`run:completed` or `run:failed`). It first replays the run's current state as
 * events, so a late subscriber misses nothing, then passes on the run's NOTIFY events, each
 * transition once. A lost listener connection is re-established and the state read again, so
 * nothing is lost or repeated, the terminal event included. Where LISTEN is unavailable, or the
 * flow's events are off, it polls the state. Every watch of one pool shares one LISTEN session
 * connection (opened by the first, closed after the last, replaced when lost or unanswering).
 *
 * @typeParam F The run's flow type.
 * @param sql The database client.
 * @param run The run id, or a {@linkcode RunHandle} that also types the events.
 * @param options The flow (for typing), a signal, and the resync and poll intervals.
 * @returns The events.
 * @throws {TypeError} When the run id is not a UUID.
 * @throws {RangeError} When no run has that id (from the iteration), or an interval is not a
 * positive number.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow, startFlow, watchRun } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow<number[]>({ slug: "squares" }).map({ slug: "square" }, (n) => n * n);
 * const runId = await startFlow(sql, flow, [1, 2, 3]);
 * for await (const event of watchRun(sql, { runId, flow })) {
 *   if (event.type === "step:completed") console.log(event.output); // [1, 4, 9]
 * }
 * ```
 */
export function watchRun<F extends DeployableFlow = never>(
  sql: Sql,
  run: string | RunHandle<F>,
  options: WatchRunOptions<F> = {},
): AsyncGenerator<RunEvent<F>, void, undefined> {
  const runId = typeof run === "string" ? run : run?.runId;
  assertUuid(runId, "Cannot watch run");
  const action = `Cannot watch run ${runId}`;
  const resyncMs = positive(options.resyncIntervalMs ?? 5000, "resyncIntervalMs", action);
  const pollMs = positive(options.pollIntervalMs ?? 50, "pollIntervalMs", action);
  const maxPollMs = Math.max(
    pollMs,
    positive(options.maxPollIntervalMs ?? 250, "maxPollIntervalMs", action),
  );
  return watch(sql, runId, options, { resyncMs, pollMs, maxPollMs }) as AsyncGenerator<
    RunEvent<F>,
    void,
    undefined
  >;
}

interface Intervals {
  readonly resyncMs: number;
  readonly pollMs: number;
  readonly maxPollMs: number;
}

async function* watch(
  sql: Sql,
  runId: string,
  options: WatchRunOptions<DeployableFlow>,
  intervals: Intervals,
): AsyncGenerator<RunEventPayload, void, undefined> {
  // Polls without LISTEN or while the flow's events are off; otherwise resyncs now and then.
  let polling = false;
  let pollMs = intervals.pollMs;
  const feed = new RunEventFeed(runId, async () => {
    const row = await readState(sql, runId, intervals.pollMs, options.signal);
    if (row === null) return null;
    const was = polling;
    polling = subscription === null || !row.events_enabled;
    if (polling && !was) schedule(pollMs);
    return row.events;
  });
  let subscription: ChannelSubscription | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended = false;
  let started = false;
  // Every tick reads the state on the pool, never on the listener: the shared listener
  // reconnects by itself and replaces a session that stops answering. While it is down, the
  // state is read every RECONNECTING_RESYNC_MS.
  const tick = () => {
    feed.resync();
    if (polling) {
      schedule(pollMs);
      pollMs = Math.min(intervals.maxPollMs, pollMs * 1.5);
    } else {
      schedule(
        subscription?.listening === false
          ? Math.min(intervals.resyncMs, RECONNECTING_RESYNC_MS)
          : intervals.resyncMs,
      );
    }
  };
  let dueAt = Infinity;
  const schedule = (ms: number) => {
    clearTimeout(timer);
    dueAt = Infinity;
    if (ended) return;
    dueAt = Date.now() + ms;
    timer = setTimeout(() => {
      dueAt = Infinity;
      tick();
    }, ms);
  };
  // A read already due sooner stays: interruptions that follow each other must not push it out.
  const scheduleBy = (ms: number) => {
    if (Date.now() + ms < dueAt) schedule(ms);
  };
  if (options.listen !== false) {
    subscription = subscribeChannel(sql, runChannel(runId), {
      onNotify: (payload) => feed.push(JSON.parse(payload) as RunEventPayload),
      // Notifications sent while the session is down are gone. Live events wait for the resync
      // that follows the new LISTEN, so that none goes ahead of the state it follows.
      onInterrupt: () => {
        feed.interrupt();
        scheduleBy(Math.min(intervals.resyncMs, RECONNECTING_RESYNC_MS));
      },
      // The first LISTEN's answer before the iteration starts is covered by its first read.
      onListening: () => {
        if (started) feed.resync();
      },
    });
    if (await answered(subscription.ready) === "failed") {
      await subscription.close();
      subscription = null;
    }
  }
  started = true;
  polling = subscription === null;
  schedule(polling ? pollMs : intervals.resyncMs);
  try {
    yield* feed.events(options.signal);
  } finally {
    ended = true;
    clearTimeout(timer);
    await subscription?.close();
  }
}

/** While the shared listener reconnects, how often a listening watch reads the state anyway. */
const RECONNECTING_RESYNC_MS = 1000;

/** How long a watch waits for its channel's first LISTEN answer before it reads the state. */
const LISTEN_ANSWER_MS = 1000;

/**
 * Settles with the LISTEN's outcome, or "pending" after LISTEN_ANSWER_MS: a listener that does
 * not answer must not hold back the re-read, which is what finishes a watch it cannot serve.
 */
async function answered(
  listening: Promise<"listening" | "failed">,
): Promise<"listening" | "failed" | "pending"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"pending">((resolve) => {
    timer = setTimeout(() => resolve("pending"), LISTEN_ANSWER_MS);
  });
  try {
    return await Promise.race([
      listening,
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Reads the run's state, retrying what a cut or restarted connection throws (57P01,
 * CONNECTION_CLOSED, …) until it succeeds or `signal` aborts: connection trouble delays a watch,
 * it does not end it.
 */
async function readState(
  sql: Sql,
  runId: string,
  firstWaitMs: number,
  signal: AbortSignal | undefined,
): Promise<RunEventsRow<RunEventPayload> | null> {
  for (let waitMs = firstWaitMs;; waitMs = Math.min(1000, waitMs * 2)) {
    try {
      return await readRunEvents<RunEventPayload>(sql, runId);
    } catch (error) {
      if (!isTransientDatabaseError(error)) throw error;
      signal?.throwIfAborted();
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        signal?.addEventListener("abort", done, { once: true });
      });
      signal?.throwIfAborted();
    }
  }
}
