/**
 * The sockets of the pools `connect()` opens: postgres.js's own TCP connection, on which the
 * driver's buffered write goes out before the driver handles the `'close'` event.
 *
 * postgres.js 3.4.9 buffers a write shorter than 1 KiB behind `setImmediate(nextWrite)` and marks
 * it pending in `nextWriteTimer`; only `nextWrite` itself sets that back to `null`. Its `'close'`
 * handler (`closed()`) clears the immediate but leaves `nextWriteTimer` set and the buffer full.
 * From then on `write()` sees a flush "already pending" and schedules none: the StartupMessage of
 * every later reconnect of that connection is appended to the buffer and never sent, the handshake
 * waits for `connect_timeout` (`CONNECT_TIMEOUT`), the connection closes, reconnects and waits
 * again, for the life of the pool. Every statement the pool hands that connection waits 30 s and
 * fails.
 *
 * Under Deno the close of a cut connection is often handled in the same event-loop turn as the
 * answer before it, ahead of the immediate that the code awaiting that answer scheduled with its
 * next statement (Deno runs a turn's I/O callbacks before its due timers), and a statement the pool
 * hands an idle connection whose close is on its way is buffered the same way. So connections cut
 * by `pg_terminate_backend`, a server restart or a pooler are wedged this way often.
 *
 * The remedy hands the driver (its `socket` option) a socket that, when it closes, first runs the
 * driver's pending `nextWrite` immediates (cancellable_immediate.ts knows them) and only then emits
 * `'close'`, in the same synchronous step, so nothing can buffer in between. The closed
 * connection's own write is dropped (its statement fails with the connection, as before) and resets
 * its state; another connection's write just goes out a moment early, in order. Everything else is
 * what the driver does itself: the same host and port (or Unix socket), its own TLS upgrade on top
 * of this socket, keepalive, timeouts and reconnects.
 *
 * To remove it when postgres.js resets `nextWriteTimer` and the buffer in `closed()`: drop the
 * `socket` option in connect.ts and run tests/db/connect_cut_test.ts on the new version; if it
 * passes, delete this module.
 *
 * @module
 */

import net from "node:net";
import { runPendingImmediates } from "./cancellable_immediate.ts";

/** The parsed postgres.js options the driver passes to its `socket` option. */
interface DriverSocketOptions {
  readonly host: readonly string[];
  readonly port: readonly number[];
  /** A Unix socket path (a host that is a directory), or `false`. */
  readonly path: string | false;
}

/** A socket as postgres.js reads it: it records the host and port for its error messages. */
type DriverSocket = net.Socket & { host?: string; port?: number };

/** The name of postgres.js's flush of its buffered write (connection.js). */
const DRIVER_FLUSH = "nextWrite";

/**
 * A `socket` option for postgres.js: each call opens a connection to the next of the pool's hosts
 * (the driver's own rotation over a multi-host URL), on which the driver's buffered writes go out
 * before it handles the close (see the module documentation).
 *
 * @returns The factory; it keeps the host rotation of one pool.
 */
export function driverSocketFactory(): (options: DriverSocketOptions) => net.Socket {
  let next = 0;
  return (options) => {
    if (options.path) return flushingBeforeClose(net.connect(options.path));
    const index = next++ % options.port.length;
    const host = options.host[index];
    const port = options.port[index];
    const socket: DriverSocket = flushingBeforeClose(net.connect(port, host));
    socket.host = host;
    socket.port = port;
    return socket;
  };
}

/** `socket`, which runs the driver's pending flushes before it emits `'close'`. */
function flushingBeforeClose(socket: net.Socket): net.Socket {
  const emit = socket.emit;
  socket.emit = function (event: string | symbol, ...args: unknown[]): boolean {
    if (event === "close") runPendingImmediates((callback) => callback.name === DRIVER_FLUSH);
    return Reflect.apply(emit, this, [event, ...args]);
  };
  // The closed connection's flush: the stream would report the write after close as an error
  // later, when the driver no longer listens to this socket.
  const write = socket.write;
  socket.write = function (this: net.Socket, ...args: unknown[]): boolean {
    if (this.destroyed) return false;
    return Reflect.apply(write, this, args);
  } as typeof socket.write;
  return socket;
}
