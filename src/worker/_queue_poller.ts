/**
 * Wakes the idle workers of one process without LISTEN (behind a transaction pooler, or with
 * `listen: false`): the co-hosted workers of a function, one per step. A worker's own long poll
 * (`pgmq.read_with_poll`) would hold a connection of the pool they share for up to
 * `maxPollSeconds`; six of them on the default pool of four held every connection, and postgres.js
 * queues a statement behind a busy connection's, so claims, completions and heartbeats waited for
 * the polls (a run took minutes, a shutdown never ended, and cancelling a poll at shutdown could
 * hit the neighbour's statement queued behind it on the same connection).
 *
 * Instead the workers read with the short `pgmq.read`, and one session connection outside the pool
 * (like the LISTEN session, never recycled) runs one statement at a time: it waits in the database
 * (`sluice.wait_for_messages`, checking every 100 ms for up to `maxPollSeconds`) until a queue of a
 * waiting worker has a visible message, then wakes that worker's view. The pool only ever runs short
 * statements, whatever its size, and closing the poll connection at shutdown ends no statement
 * but the wait. Only queues whose worker waits are watched: a queue
 * with messages its busy worker cannot take yet would otherwise end every wait at once. A worker
 * that starts waiting while a wait is under way is watched from the next one; until then its own
 * fallback read every `pollIntervalMs` covers it, as it covers an outage of the poll connection.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { openSessionClient } from "../db/driver/session_client.ts";
import { isTransientDatabaseError } from "../db/transient_error.ts";
import { waitForMessages } from "../db/worker_queries.ts";
import { describeError } from "./describe_error.ts";
import { QueueListener, type WakeSession } from "./_queue_listener.ts";
import { backoffDelay, sleep } from "./_retry.ts";
import type { Logger } from "./logger.ts";

/** Interval between the checks of one wait. */
const CHECK_INTERVAL_MS = 100;

/** One poll connection waking the views of the queues that get messages. */
export class PollSession implements WakeSession {
  readonly wakeUp = "shared_poll";
  readonly looksPeriodically = false;
  #client: Sql;
  #logger: Logger;
  #maxPollSeconds: number;
  #views = new Map<string, Set<QueueListener>>();
  /** Views whose worker waits for messages: their queues are the ones watched. */
  #waiting = new Set<QueueListener>();
  #changed: (() => void) | null = null;
  #closed = new AbortController();
  #closing: Promise<void> | null = null;
  #loop: Promise<void>;

  /** Opens the session; its connection opens with its first wait. */
  constructor(pool: Sql, logger: Logger, maxPollSeconds: number) {
    this.#client = openSessionClient(pool);
    this.#logger = logger;
    this.#maxPollSeconds = maxPollSeconds;
    this.#loop = this.#run();
  }

  watch(queue: string): QueueListener {
    const view = new QueueListener(queue, this);
    const views = this.#views.get(queue) ?? new Set();
    views.add(view);
    this.#views.set(queue, views);
    return view;
  }

  waiting(view: QueueListener, waiting: boolean): void {
    if (!waiting) {
      this.#waiting.delete(view);
      return;
    }
    this.#waiting.add(view);
    this.#changed?.();
  }

  async release(view: QueueListener): Promise<void> {
    this.#waiting.delete(view);
    const views = this.#views.get(view.queue);
    views?.delete(view);
    if (views?.size === 0) this.#views.delete(view.queue);
    if (this.#views.size === 0) await this.close();
  }

  /**
   * Closes the connection at once, which ends the wait under way: the database checks for a
   * closed client every 100 ms while it waits (`client_connection_check_interval`). Not a cancel
   * request: postgres.js drops the promise of the connection a cancel opens, and when that
   * connection fails (a shutdown during an outage) its rejection would end the process.
   */
  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#closed.abort();
    this.#changed?.();
    return this.#closing = (async () => {
      await this.#client.end({ timeout: 0 }).catch(() => {});
      await this.#loop;
    })();
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#closed.signal.aborted) {
      const queues = [...new Set([...this.#waiting].map((view) => view.queue))];
      if (queues.length === 0) {
        await new Promise<void>((resolve) => this.#changed = resolve);
        this.#changed = null;
        continue;
      }
      try {
        const ready = await waitForMessages(
          this.#client,
          queues,
          this.#maxPollSeconds,
          CHECK_INTERVAL_MS,
        );
        failures = 0;
        for (const queue of ready) {
          for (const view of this.#views.get(queue) ?? []) view.wake();
        }
      } catch (error) {
        if (this.#closed.signal.aborted) break;
        failures++;
        const fields = { error: describeError(error), consecutive_errors: failures };
        // The workers' fallback reads go on meanwhile, every pollIntervalMs.
        if (failures === 1 && !isTransientDatabaseError(error)) {
          this.#logger.warn(
            "cannot wait for messages: the workers read every pollIntervalMs until it recovers",
            fields,
          );
        } else {
          this.#logger.debug("waiting for messages failed: retrying", fields);
        }
        await sleep(backoffDelay(failures), this.#closed.signal);
      }
    }
  }
}
