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
 * One session serves every worker of a process that shares it (a co-hosting function's workers,
 * one per step): each worker watches its own queue through a {@linkcode QueueListener} view, and
 * the session closes with the last view.
 *
 * A notification cannot announce everything: a message sent with a delay (a retry's backoff, a
 * start delay) or one whose visibility timeout ran out becomes visible with no commit to notify.
 * So every `fallbackIntervalMs` the session looks once, in one statement on the pool
 * (`sluice.wait_for_messages` with no wait), at the queues of all the views whose worker waits, and
 * wakes those that have a visible message. An idle process thus reads once per interval whatever
 * the number of workers it hosts, instead of each worker reading its queue on its own timer. When
 * that look fails (the database is down), it wakes every waiting view: the workers then read on
 * their own, as their outage handling expects.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { type ListenerConnection, openListenerConnection } from "../db/listener.ts";
import { visibleQueues } from "../db/worker_queries.ts";
import { describeError } from "./describe_error.ts";
import { backoffDelay, sleep } from "./_retry.ts";
import type { Logger } from "./logger.ts";

/** The channel the SQL core notifies (`sluice.notify_queue`). */
export const QUEUE_READY_CHANNEL = "sluice_queue_ready";

/**
 * What wakes the {@linkcode QueueListener} views of one process: a LISTEN session, or without
 * LISTEN a poll session (`_queue_poller.ts`).
 */
export interface WakeSession {
  /** How the views are woken, as the "worker started" record reports it. */
  readonly wakeUp: "listen" | "shared_poll";
  /**
   * The session itself looks at the waiting views' queues every poll interval, so a worker waits
   * without a fallback read of its own.
   */
  readonly looksPeriodically: boolean;
  /** A view that wakes when `queue` gets messages; closing the last view closes the session. */
  watch(queue: string): QueueListener;
  /** Called by a view's close. */
  release(view: QueueListener): Promise<void>;
  /** Called by a view when its worker starts (`true`) or stops (`false`) waiting for messages. */
  waiting(view: QueueListener, waiting: boolean): void;
  /** Closes the session. */
  close(): Promise<void>;
}

/** One LISTEN session: wakes the views of the queues named by each notification. */
export class ListenerSession implements WakeSession {
  readonly wakeUp = "listen";
  readonly looksPeriodically = true;
  #pool: Sql;
  #logger: Logger;
  #connection: ListenerConnection;
  #views = new Map<string, Set<QueueListener>>();
  /** Views whose worker waits for messages: their queues are the ones looked at. */
  #waiting = new Set<QueueListener>();
  /** Set once closing starts: the connection's close. */
  #closing: Promise<void> | null = null;
  #reconnecting = false;
  #closed = new AbortController();
  /** Backend pid of the listening session, to notice a replaced connection. */
  #pid: number | null = null;

  private constructor(pool: Sql, logger: Logger) {
    this.#pool = pool;
    this.#logger = logger;
    this.#connection = openListenerConnection(pool, {
      onNotify: (channel, payload) => {
        if (channel !== QUEUE_READY_CHANNEL) return;
        for (const view of this.#views.get(payload) ?? []) view.wake();
      },
      onClose: () => {
        if (this.#closing === null) this.#reconnect();
      },
    });
  }

  /**
   * Opens the connection and LISTENs; checks the connection every `checkIntervalMs` and looks at
   * the waiting views' queues every `fallbackIntervalMs`. Resolves `null` when LISTEN fails (e.g.
   * behind a transaction pooler): the workers then poll instead.
   */
  static async open(
    pool: Sql,
    logger: Logger,
    checkIntervalMs: number,
    fallbackIntervalMs: number,
  ): Promise<ListenerSession | null> {
    const session = new ListenerSession(pool, logger);
    try {
      await session.#listen();
      session.#checkPeriodically(checkIntervalMs);
      session.#lookPeriodically(fallbackIntervalMs);
      return session;
    } catch (error) {
      logger.info("LISTEN unavailable: polling the queue instead", {
        error: describeError(error),
      });
      await session.close();
      return null;
    }
  }

  /** A view that wakes on notifications for `queue`; closing the last view closes the session. */
  watch(queue: string): QueueListener {
    const view = new QueueListener(queue, this);
    const views = this.#views.get(queue) ?? new Set();
    views.add(view);
    this.#views.set(queue, views);
    return view;
  }

  /** A notification wakes a view whether it waits or not; the periodic look only waiting ones. */
  waiting(view: QueueListener, waiting: boolean): void {
    if (waiting) this.#waiting.add(view);
    else this.#waiting.delete(view);
  }

  /** Called by a view's close. */
  async release(view: QueueListener): Promise<void> {
    this.#waiting.delete(view);
    const views = this.#views.get(view.queue);
    views?.delete(view);
    if (views?.size === 0) this.#views.delete(view.queue);
    if (this.#views.size === 0) await this.close();
  }

  /** Closes the session (its views wake and then long-poll nothing: their workers are stopping). */
  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#closed.abort();
    this.#wakeAll();
    return this.#closing = this.#connection.close();
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
      while (this.#closing === null) {
        await sleep(intervalMs, this.#closed.signal);
        if (this.#closing !== null || this.#reconnecting) continue;
        try {
          if (await this.#listen()) {
            this.#logger.debug("LISTEN connection was replaced: looking at the queues");
            this.#wakeAll();
          }
        } catch {
          if (this.#closing === null) this.#reconnect();
        }
      }
    })();
  }

  #lookPeriodically(intervalMs: number): void {
    (async () => {
      while (this.#closing === null) {
        await sleep(intervalMs, this.#closed.signal);
        if (this.#closing !== null || this.#waiting.size === 0) continue;
        const waiting = [...this.#waiting];
        try {
          const ready = new Set(
            await visibleQueues(this.#pool, [...new Set(waiting.map((v) => v.queue))]),
          );
          for (const view of waiting) if (ready.has(view.queue)) view.wake();
        } catch (error) {
          if (this.#closing !== null) break;
          this.#logger.debug("cannot look at the queues: the waiting workers read instead", {
            error: describeError(error),
          });
          for (const view of waiting) view.wake();
        }
      }
    })();
  }

  #wakeAll(): void {
    for (const views of this.#views.values()) for (const view of views) view.wake();
  }

  #reconnect(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    this.#logger.debug("LISTEN connection lost: reconnecting");
    (async () => {
      for (let failures = 1; this.#closing === null; failures++) {
        await sleep(backoffDelay(failures), this.#closed.signal);
        if (this.#closing !== null) break;
        try {
          await this.#listen();
          this.#logger.debug("LISTEN connection restored");
          // Notifications sent while the connection was down are lost: look at the queues.
          this.#wakeAll();
          break;
        } catch (error) {
          this.#logger.debug("LISTEN reconnect failed", { error: describeError(error) });
        }
      }
      this.#reconnecting = false;
    })();
  }
}

/** Wakes one worker when its queue gets messages, through a {@linkcode WakeSession}. */
export class QueueListener {
  readonly queue: string;
  #session: WakeSession;
  #sequence = 0;
  #waiters = new Set<() => void>();
  #closed: Promise<void> | null = null;

  /** Use {@linkcode QueueListener.start} or a session's `watch`. */
  constructor(queue: string, session: WakeSession) {
    this.queue = queue;
    this.#session = session;
  }

  /**
   * Opens a session of its own and watches `queue`. Resolves `null` when LISTEN fails (e.g.
   * behind a transaction pooler): the worker then long-polls instead.
   */
  static async start(
    pool: Sql,
    queue: string,
    logger: Logger,
    checkIntervalMs: number,
    fallbackIntervalMs: number,
  ): Promise<QueueListener | null> {
    return (await ListenerSession.open(pool, logger, checkIntervalMs, fallbackIntervalMs))
      ?.watch(queue) ?? null;
  }

  /** How the view is woken. */
  get wakeUp(): WakeSession["wakeUp"] {
    return this.#session.wakeUp;
  }

  /** Its session looks at the queue every poll interval while the worker waits. */
  get looksPeriodically(): boolean {
    return this.#session.looksPeriodically;
  }

  /** Increases with every notification for the queue (and when listening resumes). */
  get sequence(): number {
    return this.#sequence;
  }

  /**
   * Resolves when the sequence differs from `since` (at once if it already does), after
   * `timeoutMs` (`null`: no timeout), or when `signal` aborts.
   */
  wait(since: number, timeoutMs: number | null, signal?: AbortSignal): Promise<void> {
    if (this.#sequence !== since || signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        signal?.removeEventListener("abort", done);
        if (this.#waiters.size === 0) this.#session.waiting(this, false);
        resolve();
      };
      const timer = timeoutMs === null ? undefined : setTimeout(done, timeoutMs);
      this.#waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
      this.#session.waiting(this, true);
    });
  }

  /** Stops watching; the session closes with its last view. */
  close(): Promise<void> {
    this.wake();
    return this.#closed ??= this.#session.release(this);
  }

  /** Called by the session: a notification for the queue, or listening resumed. */
  wake(): void {
    this.#sequence++;
    for (const waiter of [...this.#waiters]) waiter();
  }
}
