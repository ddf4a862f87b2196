/**
 * Bounded reconnects for postgres.js pools: how long a connection waits before it opens again
 * after failed connects, and a gate that makes that wait cancellable when the pool ends.
 *
 * postgres.js 3.4.9 waits `(0.5–1) × min(3^n / 100, 20)` s before reconnecting, where `n` counts
 * the pool's failed connects (`options.shared.retries`, one counter for the whole pool, reset only
 * by a successful connect). A statement handed to a connection in that wait does not fail: it
 * waits too. During an outage of a few seconds `n` passes 7 within ~50 ms when several connections
 * (or a listener that copies the pool's options, counter included) fail at once, so after the
 * server is back the pool's statements park for 10–20 s. The driver also never stores the timer of
 * that wait, so `sql.end()` cannot clear it: a pool ended while parked opens a new session later.
 *
 * sluice replaces that wait with its own: {@linkcode reconnectDelayMs}, 50 ms doubling to 1 s with
 * jitter (so that many clients do not reconnect in step), bounded whatever `n` is. In the pools
 * `connect()` opens, the driver's own backoff is off and the socket factory waits before it opens
 * a connection, through a {@linkcode ReconnectGate} that `sql.end()` closes: the wait ends at once,
 * the statement waiting on it fails with `CONNECTION_ENDED`, and no session opens after `end()`.
 * A pool the application made itself keeps the driver's timer; {@linkcode boundDriverBackoff}
 * caps its counter so that the driver's wait stays below 1 s.
 *
 * @module
 */

import type { Sql } from "./postgres.ts";

/** The wait before the first reconnect after a failed connect. */
export const RECONNECT_FIRST_MS = 50;
/** The longest wait between two connects, however many failed before. */
export const RECONNECT_MAX_MS = 1000;

/**
 * How long to wait before the next connect after `failures` failed connects in a row: nothing
 * before the first retry, then 50 ms doubling to at most 1 s, each drawn from the upper half of
 * that bound (jitter, so that the connections of many processes spread out).
 *
 * @param failures Failed connects since the last successful one.
 * @param random A source of numbers in [0, 1), for tests.
 * @returns Milliseconds to wait, in `[bound / 2, bound]`.
 */
export function reconnectDelayMs(failures: number, random: () => number = Math.random): number {
  if (!(failures > 0)) return 0;
  const bound = Math.min(RECONNECT_MAX_MS, RECONNECT_FIRST_MS * 2 ** Math.min(failures - 1, 10));
  return bound * (0.5 + random() / 2);
}

/** The events of a socket that {@linkcode ReconnectGate.track} follows. */
interface TrackedSocket {
  emit(event: string | symbol, ...args: unknown[]): boolean;
  once(event: "close", listener: () => void): unknown;
}

/**
 * Whether `chunk` holds a ReadyForQuery message ('Z', length 5, a transaction status). During the
 * startup handshake, where it is looked for, no row data can hold these bytes.
 */
function hasReadyForQuery(chunk: Uint8Array): boolean {
  for (
    let i = chunk.indexOf(0x5a);
    i !== -1 && i + 5 < chunk.length;
    i = chunk.indexOf(0x5a, i + 1)
  ) {
    const status = chunk[i + 5];
    if (
      chunk[i + 1] === 0 && chunk[i + 2] === 0 && chunk[i + 3] === 0 && chunk[i + 4] === 5 &&
      (status === 0x49 || status === 0x54 || status === 0x45)
    ) return true;
  }
  return false;
}

/** The driver's failed-connect counter, shared by the connections of one pool. */
interface DriverShared {
  retries: number;
  typeArrayMap: Record<string, unknown>;
}

/**
 * Where a pool's connections wait before they reconnect. `wait()` resolves after the delay (or at
 * once when the gate is closed); `close()` ends every wait and refuses later connects.
 */
export class ReconnectGate {
  #closed = false;
  /** Connects in a row that ended before the server said it was ready. */
  #failures = 0;
  #refusals = 0;
  readonly #idle: (() => void)[] = [];
  readonly #waits = new Set<() => void>();
  /** Every delay planned, in order (the first 10,000), for tests and `bench:outage`. */
  readonly planned: number[] = [];

  /** Whether the pool ended: no connection may open any more. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Waits before a connect, as long as the connects that failed in a row call for.
   *
   * @returns `false` when the gate closed (the connect must not happen).
   */
  wait(): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    const ms = reconnectDelayMs(this.#failures);
    if (this.planned.length < 10_000) this.planned.push(ms);
    if (ms === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waits.delete(done);
        resolve(!this.#closed);
      };
      const timer = setTimeout(done, ms);
      this.#waits.add(done);
    });
  }

  /**
   * Follows one connection's socket: a connect succeeded once the server said it is ready for
   * queries (its first ReadyForQuery), and failed when the socket closed before that, whether the
   * connect was refused, timed out or the server answered "starting up" or "shutting down" (a
   * clean close, which postgres.js does not count as a failure, so its backoff never grows there).
   *
   * @param socket The socket the driver reads.
   * @returns The socket.
   */
  track<T extends TrackedSocket>(socket: T): T {
    let ready = false;
    // Reads what the driver is handed instead of listening itself: a 'data' listener added
    // before the socket connects starts a read that Deno runs on a handle already closed.
    const emit = socket.emit;
    socket.emit = function (this: T, event: string | symbol, ...args: unknown[]): boolean {
      if (event === "data" && !ready && hasReadyForQuery(args[0] as Uint8Array)) ready = true;
      return Reflect.apply(emit, this, [event, ...args]);
    };
    socket.once("close", () => {
      this.#failures = ready ? 0 : this.#failures + 1;
    });
    return socket;
  }

  /** Ends every wait and refuses every later connect. */
  close(): void {
    this.#closed = true;
    for (const done of [...this.#waits]) done();
  }

  /**
   * Notes a refused connect's socket (one that fails at once), so that {@linkcode settled} waits
   * until the driver has handled its close.
   */
  refused<T extends { once(event: "close", listener: () => void): unknown }>(socket: T): T {
    this.#refusals += 1;
    socket.once("close", () => {
      this.#refusals -= 1;
      if (this.#refusals === 0) { for (const resolve of this.#idle.splice(0)) resolve(); }
    });
    return socket;
  }

  /**
   * Resolves once every refused connect failed its statement and closed: then the driver's
   * `end()` finds each connection either open (it ends it) or closed (it is done at once), and
   * none still connecting, which it would wait for forever.
   */
  async settled(): Promise<void> {
    // The driver hands a closed connection's queued statements to it again in a later turn.
    for (let turn = 0; turn < 3; turn++) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      if (this.#refusals > 0) await new Promise<void>((resolve) => this.#idle.push(resolve));
    }
  }
}

const BOUNDED = Symbol.for("sluice.boundedDriverBackoff");

/**
 * Caps the failed-connect counter of a pool that sluice did not open (`postgres(...)` of the
 * application, handed to a worker or a client function), so that the driver's default backoff
 * waits at most `(0.5–1) × 0.81` s before a reconnect. Idempotent; leaves a pool with a backoff of
 * its own (an option `backoff` other than the driver's default) as it is.
 *
 * @param pool The pool.
 */
export function boundDriverBackoff(pool: Sql): void {
  const options = pool.options as unknown as {
    backoff?: unknown;
    shared?: DriverShared & { [BOUNDED]?: true };
  };
  const shared = options.shared;
  if (shared === undefined || shared[BOUNDED]) return;
  if (typeof options.backoff !== "function" || options.backoff.name !== "backoff") return;
  // (0.5–1) × min(3^4 / 100, 20) s: at most 0.81 s.
  const cap = 4;
  let retries = Math.min(shared.retries, cap);
  Object.defineProperty(shared, "retries", {
    get: () => retries,
    set: (value: number) => {
      retries = Math.min(value, cap);
    },
    enumerable: true,
  });
  Object.defineProperty(shared, BOUNDED, { value: true });
}

/**
 * The `shared` option of a new client made from `pool`'s parsed options (a listener session): its
 * own failed-connect counter, so that its failures never lengthen the pool's waits, and the pool's
 * array types.
 */
export function ownDriverShared(pool: Sql): DriverShared {
  const shared = (pool.options as unknown as { shared?: DriverShared }).shared;
  return { retries: 0, typeArrayMap: shared?.typeArrayMap ?? {} };
}

/**
 * Makes `pool.end()` close `gate` first, so that a connection waiting to reconnect opens nothing
 * after the end (its statement fails with `CONNECTION_ENDED`), and then end the pool as the driver
 * does.
 *
 * @param pool The pool whose socket factory waits at `gate`.
 * @param gate The gate.
 */
export function closeGateOnEnd(pool: Sql, gate: ReconnectGate): void {
  const end = pool.end;
  const ending: Sql["end"] = async (options) => {
    gate.close();
    await gate.settled();
    return await end(options);
  };
  Object.defineProperty(pool, "end", { value: ending, writable: true, configurable: true });
}

/** The driver's `backoff` option of a pool whose socket factory waits at a {@linkcode ReconnectGate}. */
export function noDriverBackoff(): number {
  return 0;
}
