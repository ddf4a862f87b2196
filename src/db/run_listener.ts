/**
 * `subscribeChannel()`: one LISTEN session per pool, shared by every watch of that pool. Each watch
 * subscribes to its run's channel; the session LISTENs on a channel while at least one watch
 * wants it (UNLISTEN after the last), so a NOTIFY still wakes only the sessions of processes that
 * watch that run. A lost session is replaced once for all its watches, with every channel
 * LISTENed again in one round trip; a session that stops answering (a frozen backend, a half-open
 * connection) is noticed by a periodic ping and replaced the same way.
 *
 * @module
 */

import type { Sql } from "./driver/postgres.ts";
import { openSessionClient } from "./driver/session_client.ts";
import { isTransientDatabaseError } from "./transient_error.ts";

/** What a subscription reports to its watch. */
export interface ChannelSubscriber {
  /** A notification arrived on the channel. */
  readonly onNotify: (payload: string) => void;
  /** The session was lost: notifications may be missed until {@linkcode onListening}. */
  readonly onInterrupt: () => void;
  /** The channel is LISTENed on the current session (again): what was missed must be read. */
  readonly onListening: () => void;
}

/** One watch's interest in one channel. */
export interface ChannelSubscription {
  /**
   * "listening" once the channel's LISTEN answered; "failed" when the server refused it for a
   * reason other than connection trouble (LISTEN unavailable, e.g. behind a transaction pooler).
   * Connection trouble leaves it pending while the listener reconnects.
   */
  readonly ready: Promise<"listening" | "failed">;
  /** Whether the channel is LISTENed on a live session right now. */
  readonly listening: boolean;
  /** Ends the subscription (the session closes after the last one of the pool). */
  close(): Promise<void>;
}

/** How often a session with subscriptions is pinged. */
const PING_INTERVAL_MS = 5000;
/** How long a ping may go unanswered before the session is replaced. */
const PING_TIMEOUT_MS = 3000;
/** Bounds of the wait between LISTENs that the server refused (not for connection trouble). */
const RETRY_FIRST_MS = 50;
const RETRY_MAX_MS = 1000;

interface Channel {
  readonly subscribers: Set<Subscription>;
  /** Whether the LISTEN answered on the current session. */
  listening: boolean;
}

class Subscription implements ChannelSubscription {
  readonly ready: Promise<"listening" | "failed">;
  readonly subscriber: ChannelSubscriber;
  readonly #owner: SharedListener;
  readonly channel: string;
  settle!: (outcome: "listening" | "failed") => void;
  closed = false;

  constructor(owner: SharedListener, channel: string, subscriber: ChannelSubscriber) {
    this.#owner = owner;
    this.channel = channel;
    this.subscriber = subscriber;
    this.ready = new Promise((resolve) => {
      this.settle = resolve;
    });
  }

  get listening(): boolean {
    return !this.closed && this.#owner.isListening(this.channel);
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return this.#owner.unsubscribe(this);
  }
}

/** One pool's listener session and the channels its watches want. */
class SharedListener {
  readonly #pool: Sql;
  readonly #channels = new Map<string, Channel>();
  #client: Sql | null = null;
  /** Whether #client's session is up (its LISTENs answered since it opened). */
  #up = false;
  #reconnecting = false;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  #closing: Promise<void> = Promise.resolve();

  constructor(pool: Sql) {
    this.#pool = pool;
  }

  isListening(channel: string): boolean {
    return this.#up && this.#channels.get(channel)?.listening === true;
  }

  subscribe(channel: string, subscriber: ChannelSubscriber): ChannelSubscription {
    const subscription = new Subscription(this, channel, subscriber);
    let entry = this.#channels.get(channel);
    if (entry !== undefined) {
      entry.subscribers.add(subscription);
      if (entry.listening && this.#up) subscription.settle("listening");
      return subscription;
    }
    entry = { subscribers: new Set([subscription]), listening: false };
    this.#channels.set(channel, entry);
    if (this.#client === null) {
      this.#open();
    } else if (!this.#reconnecting) {
      this.#listen(this.#client, channel, entry);
    }
    return subscription;
  }

  async unsubscribe(subscription: Subscription): Promise<void> {
    const entry = this.#channels.get(subscription.channel);
    if (entry === undefined || !entry.subscribers.delete(subscription)) return;
    if (entry.subscribers.size > 0) return;
    this.#channels.delete(subscription.channel);
    const client = this.#client;
    if (this.#channels.size === 0) {
      await this.#shutDown();
    } else if (client !== null && this.#up) {
      await client.unsafe(`unlisten ${subscription.channel}`).catch(() => {});
    }
  }

  /** Opens a fresh session and LISTENs on every wanted channel in one round trip. */
  #open(): void {
    const client = this.#newClient();
    this.#client = client;
    this.#up = false;
    this.#reconnecting = true;
    this.#startPinging();
    void this.#listenAll(client, RETRY_FIRST_MS);
  }

  async #listenAll(client: Sql, waitMs: number): Promise<void> {
    for (;;) {
      if (client !== this.#client) return;
      const channels = [...this.#channels.keys()];
      try {
        await client.unsafe(
          [...channels.map((channel) => `listen ${channel}`), "select 1"].join("; "),
        );
      } catch (error) {
        if (client !== this.#client) return;
        // Connection trouble: the client's next connect waits as long as its failures call for.
        if (isTransientDatabaseError(error)) continue;
        // LISTEN refused for good: the watches waiting for their first answer poll instead.
        for (const channel of channels) {
          for (const subscription of this.#channels.get(channel)?.subscribers ?? []) {
            subscription.settle("failed");
          }
        }
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        waitMs = Math.min(RETRY_MAX_MS, waitMs * 2);
        continue;
      }
      if (client !== this.#client) return;
      this.#up = true;
      this.#reconnecting = false;
      for (const [channel, entry] of this.#channels) {
        if (channels.includes(channel)) {
          this.#confirm(entry);
        } else {
          // Subscribed while the session was reconnecting.
          this.#listen(client, channel, entry);
        }
      }
      return;
    }
  }

  #listen(client: Sql, channel: string, entry: Channel): void {
    client.unsafe(`listen ${channel}`).then(
      () => {
        if (client === this.#client && this.#channels.get(channel) === entry) this.#confirm(entry);
      },
      (error) => {
        if (client !== this.#client || isTransientDatabaseError(error)) return;
        for (const subscription of entry.subscribers) subscription.settle("failed");
      },
    );
  }

  #confirm(entry: Channel): void {
    entry.listening = true;
    for (const subscription of entry.subscribers) {
      subscription.settle("listening");
      subscription.subscriber.onListening();
    }
  }

  #newClient(): Sql {
    const client = openSessionClient(this.#pool, {
      onnotify: (channel, payload) => {
        if (client !== this.#client) return;
        for (const subscription of this.#channels.get(channel)?.subscribers ?? []) {
          subscription.subscriber.onNotify(payload);
        }
      },
      // A connect that failed closes too: #listenAll retries it on the same client, whose
      // connects wait between them. Only a session that was up is replaced (once for all).
      onclose: () => {
        if (client === this.#client && this.#up) this.#replace();
      },
    });
    return client;
  }

  /** The session is lost or does not answer: every watch is told, one new session serves all. */
  #replace(): void {
    const old = this.#client;
    this.#client = null;
    this.#up = false;
    for (const entry of this.#channels.values()) {
      entry.listening = false;
      for (const subscription of entry.subscribers) subscription.subscriber.onInterrupt();
    }
    if (old !== null) this.#closing = old.end({ timeout: 0 }).catch(() => {});
    if (this.#channels.size > 0) this.#open();
    else this.#stopPinging();
  }

  #startPinging(): void {
    if (this.#pingTimer !== undefined) return;
    this.#pingTimer = setInterval(() => void this.#ping(), PING_INTERVAL_MS);
  }

  #stopPinging(): void {
    clearInterval(this.#pingTimer);
    this.#pingTimer = undefined;
  }

  async #ping(): Promise<void> {
    const client = this.#client;
    if (client === null || !this.#up) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const answered = await Promise.race([
      client`select 1 as listener_ping`.then(() => true, () => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!answered && client === this.#client) this.#replace();
  }

  async #shutDown(): Promise<void> {
    this.#stopPinging();
    const client = this.#client;
    this.#client = null;
    this.#up = false;
    this.#reconnecting = false;
    if (client !== null) this.#closing = client.end({ timeout: 0 }).catch(() => {});
    await this.#closing;
  }
}

const listeners = new WeakMap<Sql, SharedListener>();

/**
 * Subscribes to `channel` on `pool`'s shared listener session (opened on the first subscription,
 * closed after the last).
 *
 * @param pool The pool whose connection settings the session copies; one session per pool.
 * @param channel The channel (a plain identifier, e.g. from `runChannel()`).
 * @param subscriber Where notifications, interruptions and (re)established LISTENs go.
 * @returns The subscription.
 */
export function subscribeChannel(
  pool: Sql,
  channel: string,
  subscriber: ChannelSubscriber,
): ChannelSubscription {
  let listener = listeners.get(pool);
  if (listener === undefined) {
    listener = new SharedListener(pool);
    listeners.set(pool, listener);
  }
  return listener.subscribe(channel, subscriber);
}
