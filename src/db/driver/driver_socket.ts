/**
 * The sockets of the pools `connect()` opens: postgres.js's own TCP connection (upgraded to TLS
 * here for a pool with TLS), on which the driver's buffered write goes out before the driver
 * handles the `'close'` event, and whose `'close'` follows the `'error'` that ended it at once.
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
 * what the driver does itself: the same host and port (or Unix socket), keepalive, timeouts and
 * reconnects. The socket also sends one statement at a time (one_statement.ts).
 *
 * The driver fails the statements it sent on a connection when the socket emits `'error'`, and on
 * `'close'` only after a close without error. Node emits a destroyed socket's `'error'` and
 * `'close'` in one step; Deno's TLS socket emits them in different turns (an `UnexpectedEof` when
 * the peer or the network ended the connection without the TLS shutdown), and a statement sent in
 * between, typically by the code that the failed statement's rejection resumed, was neither failed
 * nor handed to another connection: it waited forever. So the socket emits `'close'` right after an
 * `'error'` that destroyed it, as Node does, and ignores the late one.
 *
 * Over TLS the driver would build its TLS socket on top of the one handed to it and listen only to
 * that one, so neither remedy would reach it. For a pool with TLS (`sslmode` other than `disable`,
 * or `PGSSL`), connect.ts therefore gives the driver `ssl: false` and this factory does the upgrade
 * itself, as the driver would: SSLRequest, then `tls.connect()` on the TCP socket when the server
 * answers 'S' (at once, with ALPN `postgresql`, under `sslnegotiation=direct`); `require`, `allow`
 * and `prefer` do not verify the certificate, `verify-full` (or `true`) does, an object is passed
 * to `tls.connect()`, and only `prefer` goes on without TLS when the server answers 'N'. The driver
 * gets the TLS socket, with both remedies. The upgrade has its own `connect_timeout` (the driver's
 * starts after it, for the startup handshake); a failed upgrade reaches the driver as an error of
 * the socket it gets, so that it handles it like a failed connect (the next host of a multi-host
 * URL, its backoff).
 *
 * To remove it when postgres.js resets `nextWriteTimer` and the buffer in `closed()` and fails the
 * statements still sent on a connection that closed with an error: drop the `socket` option and the
 * TLS settings in connect.ts and run tests/db/connect_cut_test.ts and
 * tests/db/connect_tls_cut_test.ts on the new version; if they pass, delete this module.
 *
 * @module
 */

import net from "node:net";
import tls from "node:tls";
import { runPendingImmediates } from "./cancellable_immediate.ts";
import { oneStatementAtATime } from "./one_statement.ts";
import { ReconnectGate } from "./reconnect.ts";

/** The parsed postgres.js options the driver passes to its `socket` option. */
interface DriverSocketOptions {
  readonly host: readonly string[];
  readonly port: readonly number[];
  /** A Unix socket path (a host that is a directory), or `false`. */
  readonly path: string | false;
  /** Seconds to wait for a connection to open. */
  readonly connect_timeout: number;
}

/** A socket as postgres.js reads it: it records the host and port for its error messages. */
type DriverSocket = net.Socket & { host?: string; port?: number };

/** The TLS settings of a pool, as postgres.js parsed them (its `ssl` and `sslnegotiation`). */
export interface DriverTls {
  /** `require`, `allow`, `prefer`, `verify-full`, `true`, or options of `tls.connect()`. */
  readonly ssl: string | boolean | Record<string, unknown>;
  /** `direct` for a TLS handshake without SSLRequest (PostgreSQL 17), else `null`. */
  readonly sslnegotiation: string | null;
}

/** Why {@linkcode TlsUpgradeError} was thrown. */
export type TlsUpgradeFailure = "CONNECT_TIMEOUT" | "SSL_NOT_SUPPORTED";

/** The TLS upgrade of a new connection did not complete. */
export class TlsUpgradeError extends Error {
  /** `CONNECT_TIMEOUT` (retryable, as the driver's own) or `SSL_NOT_SUPPORTED` (no TLS). */
  readonly code: TlsUpgradeFailure;
  /** The host (or Unix socket path) of the connection. */
  readonly host: string;
  /** Its port, or `undefined` for a Unix socket. */
  readonly port: number | undefined;

  /**
   * @param code Why it failed.
   * @param host The host or Unix socket path.
   * @param port The port, for TCP.
   */
  constructor(code: TlsUpgradeFailure, host: string, port: number | undefined) {
    const where = port === undefined ? host : `${host}:${port}`;
    super(
      code === "CONNECT_TIMEOUT"
        ? `write CONNECT_TIMEOUT ${where}: no TLS connection within the connect timeout`
        : `Cannot connect to ${where} over TLS: the server does not support SSL (it answered the ` +
          "SSLRequest with 'N'); use sslmode=prefer or disable, or turn ssl on in the server",
    );
    this.name = "TlsUpgradeError";
    this.code = code;
    this.host = host;
    this.port = port;
  }
}

/** The name of postgres.js's flush of its buffered write (connection.js). */
const DRIVER_FLUSH = "nextWrite";

/** SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = new Uint8Array([0, 0, 0, 8, 4, 210, 22, 47]);

/** The server's yes to an SSLRequest. */
const SSL_ACCEPTED = 0x53; // 'S'

/** The `socket` option of a pool `connect()` opened: see {@linkcode driverSocketFactory}. */
export interface DriverSocketFactory {
  (options: DriverSocketOptions): Promise<net.Socket>;
  /** Where the pool's connections wait before they reconnect; `sql.end()` closes it. */
  readonly gate: ReconnectGate;
  /** The pool's TLS settings, for a sibling factory (a listener session's). */
  readonly tls: DriverTls | undefined;
}

/**
 * A `socket` option for postgres.js: each call waits the reconnect delay that the pool's failed
 * connects call for (reconnect.ts; the driver's own backoff must be off), then opens a connection
 * to the next of the pool's hosts (the driver's own rotation over a multi-host URL), upgraded to
 * TLS when `tls` is given, on which the driver's buffered writes go out before it handles the
 * close (see the module documentation). Once its gate is closed (the pool ended) it opens nothing:
 * the connect fails with `CONNECTION_ENDED`.
 *
 * @param tlsSettings The pool's TLS settings; the driver itself must then get `ssl: false`.
 * @returns The factory; it keeps the host rotation and the reconnect gate of one pool.
 */
export function driverSocketFactory(tlsSettings?: DriverTls): DriverSocketFactory {
  let next = 0;
  const gate = new ReconnectGate();
  const open = (options: DriverSocketOptions): net.Socket | Promise<net.Socket> => {
    let socket: DriverSocket;
    if (options.path) {
      socket = net.connect(options.path);
      socket.host = options.path;
    } else {
      const index = next++ % options.port.length;
      socket = net.connect(options.port[index], options.host[index]);
      socket.host = options.host[index];
      socket.port = options.port[index];
    }
    if (tlsSettings === undefined) {
      return gate.track(flushingBeforeClose(oneStatementAtATime(socket)));
    }
    return upgraded(socket, tlsSettings, options.connect_timeout).then(
      (secure) => gate.track(flushingBeforeClose(oneStatementAtATime(secure))),
      (error: unknown) => gate.track(failing(error, socket)),
    );
  };
  const factory = async (options: DriverSocketOptions): Promise<net.Socket> => {
    if (await gate.wait()) return open(options);
    const where = options.path || `${options.host[0]}:${options.port[0]}`;
    const ended = Object.assign(
      new Error(`write CONNECTION_ENDED ${where}: the pool was ended`),
      { code: "CONNECTION_ENDED" },
    );
    return gate.refused(failing(ended, { host: options.path || options.host[0] }));
  };
  return Object.assign(factory, { gate, tls: tlsSettings });
}

/** `socket` upgraded to TLS as postgres.js's `secure()` would (see the module documentation). */
function upgraded(socket: DriverSocket, settings: DriverTls, timeoutSeconds: number) {
  return new Promise<DriverSocket>((resolve, reject) => {
    const host = socket.host ?? "";
    const fail = (error: unknown) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(
      () => fail(new TlsUpgradeError("CONNECT_TIMEOUT", host, socket.port)),
      timeoutSeconds * 1000,
    );
    // `on`, not `once`: an abandoned socket may report more than one error, and an error nobody
    // listens to would be thrown.
    socket.on("error", fail);
    const done = (result: DriverSocket) => {
      clearTimeout(timer);
      socket.removeListener("error", fail);
      resolve(result);
    };
    const handshake = () => {
      const secure: DriverSocket = tls.connect({
        socket,
        servername: net.isIP(host) || socket.port === undefined ? undefined : host,
        ...(settings.sslnegotiation === "direct" ? { ALPNProtocols: ["postgresql"] } : {}),
        ...(settings.ssl === "require" || settings.ssl === "allow" || settings.ssl === "prefer"
          ? { rejectUnauthorized: false }
          : typeof settings.ssl === "object"
          ? settings.ssl
          : {}),
      });
      secure.host = socket.host;
      secure.port = socket.port;
      secure.on("error", fail);
      secure.once("secureConnect", () => {
        secure.removeListener("error", fail);
        done(secure);
      });
    };
    if (settings.sslnegotiation === "direct") return handshake();
    socket.write(SSL_REQUEST);
    socket.once("data", (answer: Uint8Array) => {
      if (answer[0] === SSL_ACCEPTED) handshake();
      else if (settings.ssl === "prefer") done(socket);
      else fail(new TlsUpgradeError("SSL_NOT_SUPPORTED", host, socket.port));
    });
  });
}

/**
 * A socket that fails with `error` once the driver listens to it, so that the driver handles a
 * failed upgrade as a failed connect (a factory that rejects would leave the connection stuck).
 */
function failing(error: unknown, cause: { host?: string; port?: number }): net.Socket {
  const socket: DriverSocket = flushingBeforeClose(new net.Socket());
  socket.host = cause.host;
  socket.port = cause.port;
  // The driver's StartupMessage has nowhere to go; writing it to an unconnected socket would fail
  // it with an error of its own instead of `error`.
  socket.write = () => false;
  setTimeout(() => socket.destroy(error instanceof Error ? error : new Error(String(error))));
  return socket;
}

/**
 * `socket`, which runs the driver's pending flushes before it emits `'close'`, and emits `'close'`
 * right after the `'error'` that destroyed it (see the module documentation).
 */
function flushingBeforeClose<T extends net.Socket>(socket: T): T {
  const emit = socket.emit;
  let closeEmitted = false;
  socket.emit = function (this: T, event: string | symbol, ...args: unknown[]): boolean {
    // The driver stops listening when it handles the close; a later error of the dead socket
    // (`write UNKNOWN` from a write the stream still had) would otherwise be thrown where no
    // caller can catch it, and end the process.
    if (event === "error" && this.listenerCount("error") === 0) return false;
    if (event === "close") {
      if (closeEmitted) return false;
      closeEmitted = true;
      runPendingImmediates((callback) => callback.name === DRIVER_FLUSH);
    }
    const listened = Reflect.apply(emit, this, [event, ...args]);
    if (event === "error" && this.destroyed) this.emit("close", true);
    return listened;
  };
  // The closed connection's flush: the stream would report the write after close as an error
  // later, when the driver no longer listens to this socket.
  const write = socket.write;
  socket.write = function (this: net.Socket, ...args: unknown[]): boolean {
    if (this.destroyed) return false;
    return Reflect.apply(write, this, args);
  } as T["write"];
  return socket;
}
