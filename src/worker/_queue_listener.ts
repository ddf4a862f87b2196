/**
 * Wakes an idle worker when its queue gets messages: a dedicated session connection LISTENs on
 * `sluice_queue_ready` (the SQL core notifies it with the queue name whenever a committing
 * transaction makes messages visible on a queue).
 *
 * Lost wakeups are avoided with a sequence number: the poll loop notes it before reading, and
 * waits only while it is unchanged, so a notification that arrives between an empty read and the
 * start of the wait ends the wait at once. After the connection is lost it is re-established with
 * backoff, and the sequence is bumped when listening resumes, since notifications sent meanwhile
 * are gone. A periodic check re-issues LISTEN (idempotent) and compares the backend pid, so a
 * connection replaced without the close being noticed is caught too.
 *
 * @module
 */

import type { Sql } from "../db/postgres.ts";
import { type ListenerConnection, openListenerConnection } from "../db/listener.ts";
import { describeError } from "./describe_error.ts";
import { backoffDelay, sleep } from "./_retry.ts";
import type { Logger } from "./logger.ts";

/** The channel the SQL core notifies (`sluice.notify_queue`). */
export const QUEUE_READY_CHANNEL = "sluice_queue_ready";

/** Listens for notifications about one queue on a connection of its own. */
export class QueueListener {
  #queue: string;
  #logger: Logger;
  #connection: ListenerConnection;
  #sequence = 0;
  #waiters = new Set<() => void>();
  #closing = false;
  #reconnecting = false;
  #closed = new AbortController();
  /** Backend pid of the listening session, to notice a replaced connection. */
  #pid: number | null = null;

  private constructor(pool: Sql, queue: string, logger: Logger) {
    this.#queue = queue;
    this.#logger = logger;
    this.#connection = openListenerConnection(pool, {
      onNotify: (channel, payload) => {
        if (channel === QUEUE_READY_CHANNEL && payload === this.#queue) this.#wake();
      },
      onClose: () => {
        if (!this.#closing) this.#reconnect();
      },
    });
  }

  /**
   * Opens the connection and LISTENs. Resolves `null` when LISTEN fails (e.g. behind a
   * transaction pooler): the worker then long-polls instead.
   */
  static async start(
    pool: Sql,
    queue: string,
    logger: Logger,
    checkIntervalMs: number,
  ): Promise<QueueListener | null> {
    const listener = new QueueListener(pool, queue, logger);
    try {
      await listener.#listen();
      listener.#checkPeriodically(checkIntervalMs);
      return listener;
    } catch (error) {
      logger.info("LISTEN unavailable: long-polling the queue instead", {
        error: describeError(error),
      });
      await listener.close();
      return null;
    }
  }

  /** Increases with every notification for the queue (and when listening resumes). */
  get sequence(): number {
    return this.#sequence;
  }

  /**
   * Resolves when the sequence differs from `since` (at once if it already does), after
   * `timeoutMs`, or when `signal` aborts.
   */
  wait(since: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.#sequence !== since || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** Stops listening and closes the connection. */
  async close(): Promise<void> {
    this.#closing = true;
    this.#closed.abort();
    this.#wake();
    await this.#connection.close();
  }

  /** LISTENs (a no-op when already listening); resolves whether the session is a new one. */
  async #listen(): Promise<boolean> {
    const pid = await this.#connection.listen(QUEUE_READY_CHANNEL);
    const replaced = this.#pid !== null && this.#pid !== pid;
    this.#pid = pid;
    return replaced;
  }

  #checkPeriodically(intervalMs: number): void {
    (async () => {
      while (!this.#closing) {
        await sleep(intervalMs, this.#closed.signal);
        if (this.#closing || this.#reconnecting) continue;
        try {
          if (await this.#listen()) {
            this.#logger.debug("LISTEN connection was replaced: looking at the queue");
            this.#wake();
          }
        } catch {
          if (!this.#closing) this.#reconnect();
        }
      }
    })();
  }

  #wake(): void {
    this.#sequence++;
    for (const waiter of [...this.#waiters]) waiter();
  }

  #reconnect(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    this.#logger.debug("LISTEN connection lost: reconnecting");
    (async () => {
      for (let failures = 1; !this.#closing; failures++) {
        await sleep(backoffDelay(failures), this.#closed.signal);
        if (this.#closing) break;
        try {
          await this.#listen();
          this.#logger.debug("LISTEN connection restored");
          // Notifications sent while the connection was down are lost: look at the queue.
          this.#wake();
          break;
        } catch (error) {
          this.#logger.debug("LISTEN reconnect failed", { error: describeError(error) });
        }
      }
      this.#reconnecting = false;
    })();
  }
}
