/**
 * A socket of `connect()`'s pools on which a statement goes out only once the one before it has
 * been answered (its ReadyForQuery came back): postgres.js's pipelining, without the pipeline.
 *
 * postgres.js sends a statement on a connection still running another when every connection of
 * its pool is busy. Behind a pooler in transaction mode the second one's answer can be lost: the
 * pooler hands the server connection back at the first statement's ReadyForQuery, outside a
 * transaction. PgBouncer 1.18 loses the answer to one sent as Parse/Describe/Flush (a statement
 * with parameters when prepared statements are off; pgbouncer#759); Supavisor drops pipelined
 * answers too (supavisor#1061). A heartbeat sent behind a worker's claim then never returned, and
 * its worker's stop waited for it (#45).
 *
 * The driver's own `max_pipeline: 0` stops the pipelining but breaks its transactions: the check
 * that declines a second statement also skips the hook that reserves the connection for
 * `sql.begin`. So the driver pipelines as before and this socket holds back what it writes: the
 * first message of a statement waits while the connection still owes a ReadyForQuery, and the
 * messages of a statement already under way (the Bind/Execute/Sync that follows a
 * Parse/Describe/Flush, a cursor's next Execute, COPY data) go out at once. Inside a transaction
 * this serialises statements the driver would have pipelined, one round trip each.
 *
 * The startup and authentication exchange (and a cancel request's connection) go out untouched:
 * the socket counts only from the first ReadyForQuery on.
 *
 * @module
 */

import type net from "node:net";

/** A simple query: one ReadyForQuery answers it. */
const QUERY = 0x51; // 'Q'
/** The end of an extended-protocol statement: one ReadyForQuery answers it. */
const SYNC = 0x53; // 'S'
/** A function call (not used by the driver): one ReadyForQuery answers it. */
const FUNCTION_CALL = 0x46; // 'F'
/** Terminate: nothing answers it. */
const TERMINATE = 0x58; // 'X'
/** COPY data, done and fail: part of the COPY statement running. */
const COPY_MESSAGES = new Set([0x64, 0x63, 0x66]); // 'd', 'c', 'f'
/** ReadyForQuery, from the server. */
const READY_FOR_QUERY = 0x5a; // 'Z'

/** One write the socket holds back, with the driver's callback. */
interface HeldWrite {
  bytes: Uint8Array;
  readonly callback: ((error?: Error | null) => void) | undefined;
}

/**
 * `socket`, on which a statement goes out only once every statement before it has been answered
 * (see the module documentation).
 *
 * @param socket A connection to PostgreSQL (or a pooler), before the driver writes to it.
 * @returns The same socket, its `write` and `emit` wrapped.
 */
export function oneStatementAtATime<T extends net.Socket>(socket: T): T {
  const write = socket.write;
  const emit = socket.emit;
  const state = {
    /** The first ReadyForQuery came back: the startup exchange is over. */
    started: false,
    /** Statements sent whose ReadyForQuery has not come back. */
    owed: 0,
    /** Messages of a statement went out, its Sync (or Query) not yet. */
    underWay: false,
    /** Header bytes of the server's message being read (type and length, 5 bytes). */
    header: new Uint8Array(5),
    headerLength: 0,
    /** Bytes of the server's current message still to skip. */
    skip: 0,
  };
  const held: HeldWrite[] = [];

  /** Sends the held messages that may go now, in order. */
  const pump = () => {
    while (held.length > 0) {
      const head = held[0];
      const sendable = sendablePrefix(head.bytes);
      if (sendable === 0) return;
      if (sendable === head.bytes.length) {
        held.shift();
        Reflect.apply(write, socket, head.callback ? [head.bytes, head.callback] : [head.bytes]);
      } else {
        Reflect.apply(write, socket, [head.bytes.subarray(0, sendable)]);
        head.bytes = head.bytes.subarray(sendable);
      }
    }
  };

  /** How many bytes from the start of `bytes` (whole messages) may go now; counts them as sent. */
  const sendablePrefix = (bytes: Uint8Array): number => {
    let at = 0;
    while (at + 5 <= bytes.length) {
      const type = bytes[at];
      const size = 1 + new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
      if (!COPY_MESSAGES.has(type) && !state.underWay && type !== TERMINATE) {
        if (state.owed > 0) return at;
        state.underWay = true;
      }
      if (type === QUERY || type === SYNC || type === FUNCTION_CALL) {
        state.underWay = false;
        state.owed++;
      }
      at += size;
    }
    // A message the driver split over writes (it writes whole ones): the rest goes with it.
    return bytes.length;
  };

  /** Counts the ReadyForQuery messages in a chunk from the server. */
  const read = (chunk: Uint8Array) => {
    let at = 0;
    while (at < chunk.length) {
      if (state.skip > 0) {
        const skipped = Math.min(state.skip, chunk.length - at);
        state.skip -= skipped;
        at += skipped;
        continue;
      }
      state.header[state.headerLength++] = chunk[at++];
      if (state.headerLength < 5) continue;
      state.headerLength = 0;
      state.skip = new DataView(state.header.buffer).getUint32(1) - 4;
      if (state.header[0] === READY_FOR_QUERY) {
        state.started = true;
        state.owed = Math.max(0, state.owed - 1);
      }
    }
  };

  socket.write = function (this: T, ...args: unknown[]): boolean {
    const [data, second, third] = args;
    if (!state.started || !(data instanceof Uint8Array)) return Reflect.apply(write, this, args);
    const callback = (typeof second === "function" ? second : third) as HeldWrite["callback"];
    held.push({ bytes: data, callback: typeof callback === "function" ? callback : undefined });
    pump();
    // Held bytes are the socket's, as if buffered: the driver goes on as after a write.
    return true;
  } as T["write"];

  socket.emit = function (this: T, event: string | symbol, ...args: unknown[]): boolean {
    if (event === "data" && args[0] instanceof Uint8Array) {
      read(args[0]);
      pump();
    } else if (event === "close") {
      // What was held dies with the connection; the driver fails its statements.
      held.length = 0;
    }
    return Reflect.apply(emit, this, [event, ...args]);
  };
  return socket;
}
