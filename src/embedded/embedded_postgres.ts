/**
 * An embedded PostgreSQL for development and tests: PGlite (PostgreSQL compiled to WebAssembly)
 * inside this process, served over the wire protocol on a free loopback port by a small bridge,
 * so that postgres.js, the migrations and the workers run against it unchanged. Limits: one
 * session for every connection, one process (docs/embedded.md).
 *
 * Notifications: PGlite's one session receives every NOTIFY committed by any connection (the
 * NotificationResponse comes back in the reply of the exchange that committed it), so the bridge
 * takes them out of that reply and writes each to the connections that LISTEN on its channel.
 * The session LISTENs on the union of every connection's channels: it is told LISTEN as the
 * clients send it, and a client's UNLISTEN that the session obeys for everyone is answered with a
 * LISTEN again for the other connections still listening.
 *
 * @module
 */

// A full specifier, as in src/db/driver/postgres.ts: a user project loading the package resolves it
// without an import map entry of its own.
// deno-lint-ignore no-import-prefix
import { PGlite } from "npm:@electric-sql/pglite@0.5.17";
import { type ScramExchange, ScramProtocolError, ScramVerifier } from "./scram.ts";

/**
 * The PGlite version imported above (a test holds the two equal): it names the migrated snapshot,
 * since another version may not read its files.
 */
export const PGLITE_VERSION = "0.5.17";

/** Options of {@linkcode startEmbeddedPostgres}. */
export interface StartEmbeddedPostgresOptions {
  /**
   * A directory that keeps the database between runs (created when missing). Without it the
   * database lives in memory and is gone on `stop()`.
   */
  dataDir?: string;
  /**
   * The TCP port on 127.0.0.1 to listen on.
   *
   * @default {0} (a free port)
   */
  port?: number;
  /**
   * The password of user `postgres`, which every connection must prove it knows (SCRAM-SHA-256,
   * as PostgreSQL's default): a fixed one keeps `url` the same across restarts on a fixed `port`.
   *
   * @default {a random one for each start}
   */
  password?: string;
  /**
   * A data directory dump (from {@linkcode EmbeddedPostgres.dumpDataDir}) to start from, for a
   * new database: copying a migrated one is much faster than migrating again. Ignored when
   * `dataDir` already holds a database.
   */
  loadDataDir?: Blob;
}

/** A running embedded database. Dispose it (or call `stop()`) to close it. */
export interface EmbeddedPostgres extends AsyncDisposable {
  /** Connection URL of user `postgres` to database `postgres` over TCP on 127.0.0.1. */
  url: string;
  /** The TCP port on 127.0.0.1. */
  port: number;
  /** The password every connection must prove it knows (SCRAM-SHA-256); it is in `url`. */
  password: string;
  /** The data directory, or `null` for an in-memory database. */
  dataDir: string | null;
  /** The whole data directory as an uncompressed tarball, for `loadDataDir`. */
  dumpDataDir(): Promise<Blob>;
  /** Closes the socket server and the database (flushing a data directory). Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts PGlite in this process and serves it on a free port of 127.0.0.1.
 *
 * @example Run a query against an embedded database
 * ```ts ignore
 * import postgres from "postgres";
 * import { startEmbeddedPostgres } from "./embedded_postgres.ts";
 * await using pg = await startEmbeddedPostgres();
 * const sql = postgres(pg.url);
 * console.log(await sql`select version()`);
 * await sql.end();
 * ```
 */
export async function startEmbeddedPostgres(
  options: StartEmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgres> {
  const dataDir = options.dataDir ?? null;
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`Cannot start the embedded database: port ${port} is not 0..65535`);
  }
  const password = options.password ?? generatePassword();
  if (password === "") {
    throw new RangeError("Cannot start the embedded database: the password is empty");
  }
  if (dataDir !== null) {
    // Owner-only, as PostgreSQL insists for its own: the files (WAL included) hold the data.
    await Deno.mkdir(dataDir, { recursive: true, mode: 0o700 });
    await Deno.chmod(dataDir, 0o700);
  }
  const existing = dataDir !== null && await exists(`${dataDir}/PG_VERSION`);
  const load = existing ? undefined : options.loadDataDir;
  // Listening first: a taken port fails before the database is opened.
  const listener = listen(port);
  let db: PGlite;
  try {
    db = await PGlite.create({
      ...(dataDir === null ? {} : { dataDir }),
      ...(load === undefined ? {} : { loadDataDir: load }),
    });
  } catch (error) {
    listener.close();
    throw error;
  }
  const verifier = new ScramVerifier(password);
  const session = new SessionLock();
  const connections = new Set<Deno.Conn>();
  const channels = new Channels();
  const clients = new Map<number, Client>();
  const serving = (async () => {
    const served: Promise<void>[] = [];
    for await (const conn of listener) {
      connections.add(conn);
      const client = new Client(conn, clients);
      served.push(
        serveConnection({ db, verifier, session, channels, clients }, client).finally(() => {
          connections.delete(conn);
          clients.delete(client.pid);
        }),
      );
    }
    await Promise.allSettled(served);
  })();
  let stopping: Promise<void> | undefined;
  const stop = () =>
    stopping ??= (async () => {
      listener.close();
      for (const conn of connections) closeQuietly(conn);
      await serving;
      await db.close();
    })();
  return {
    url: `postgres://postgres:${
      encodeURIComponent(password)
    }@127.0.0.1:${listener.addr.port}/postgres`,
    port: listener.addr.port,
    password,
    dataDir,
    dumpDataDir: () => db.dumpDataDir("none"),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Thrown when the embedded database's port is taken. */
export class EmbeddedPortInUseError extends Error {
  /** The port asked for. */
  port: number;

  /** @param port The port asked for. */
  constructor(port: number) {
    super(
      `Cannot start the embedded database: port ${port} on 127.0.0.1 is in use; ` +
        "choose another port, or 0 for a free one",
    );
    this.name = "EmbeddedPortInUseError";
    this.port = port;
  }
}

function listen(port: number): Deno.TcpListener {
  try {
    return Deno.listen({ hostname: "127.0.0.1", port });
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) throw new EmbeddedPortInUseError(port);
    throw error;
  }
}

/** 24 random bytes, base64url: no character a URL needs escaped. */
function generatePassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Who holds the one PGlite session: a connection holds it for one exchange, and keeps it while
 * its transaction is open. Waiters are served in arrival order.
 */
class SessionLock {
  #owner: Deno.Conn | null = null;
  #waiters: { conn: Deno.Conn; resolve: () => void; reject: (error: Error) => void }[] = [];

  /**
   * Resolves once `conn` holds the session (at once when it already does); rejects with
   * {@linkcode CancelledWait} when {@linkcode cancel} takes `conn` out of the queue first.
   */
  acquire(conn: Deno.Conn): Promise<void> {
    if (this.#owner === conn) return Promise.resolve();
    if (this.#owner === null) {
      this.#owner = conn;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => this.#waiters.push({ conn, resolve, reject }));
  }

  /** Takes `conn` out of the queue, failing its wait; whether it was waiting. */
  cancel(conn: Deno.Conn): boolean {
    const index = this.#waiters.findIndex((waiter) => waiter.conn === conn);
    if (index === -1) return false;
    const [waiter] = this.#waiters.splice(index, 1);
    waiter.reject(new CancelledWait());
    return true;
  }

  /** Hands the session to the next waiter, if `conn` holds it. */
  release(conn: Deno.Conn): void {
    if (this.#owner !== conn) return;
    const next = this.#waiters.shift();
    this.#owner = next?.conn ?? null;
    next?.resolve();
  }

  /** Whether `conn` holds the session. */
  holds(conn: Deno.Conn): boolean {
    return this.#owner === conn;
  }
}

/** A wait for the session that a CancelRequest ended. */
class CancelledWait extends Error {
  constructor() {
    super("canceling statement due to user request");
    this.name = "CancelledWait";
  }
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;
const CANCEL_REQUEST = 80877102;
/** Message types that end an exchange: Sync, simple Query. */
const EXCHANGE_END = new Set(["S".charCodeAt(0), "Q".charCodeAt(0)]);
/** Flush: the client waits for replies, but the exchange goes on (the session stays held). */
const FLUSH = "H".charCodeAt(0);
const TERMINATE = "X".charCodeAt(0);

/**
 * What every connection shares: the database, who holds its session, who listens where, and the
 * connections by the process id their BackendKeyData gave them.
 */
interface Shared {
  db: PGlite;
  verifier: ScramVerifier;
  session: SessionLock;
  channels: Channels;
  clients: Map<number, Client>;
}

/** One client connection, whose writes (replies and notifications) go out one at a time. */
class Client {
  readonly conn: Deno.Conn;
  /**
   * Its own BackendKeyData (PGlite's one session has one), so that a CancelRequest names it: a
   * process id unique among the open connections and a random secret.
   */
  readonly pid: number;
  readonly secret: number = crypto.getRandomValues(new Int32Array(1))[0];
  /**
   * Set when a cancelled wait answered an extended-protocol exchange with an error: as
   * PostgreSQL does after an error, its messages are dropped up to its Sync.
   */
  skippingToSync = false;
  #writing: Promise<void> = Promise.resolve();

  /** LISTEN/UNLISTEN statements of the connection's prepared statements, by name. */
  #prepared = new Map<string, ListenStatement[]>();
  /** LISTEN/UNLISTEN statements sent since the last end of an exchange. */
  #sent: ListenStatement[] = [];

  constructor(conn: Deno.Conn, clients: Map<number, Client>) {
    this.conn = conn;
    let pid = 1 + Math.floor(Math.random() * 0x7ffffffe);
    while (clients.has(pid)) pid = 1 + (pid % 0x7ffffffe);
    this.pid = pid;
    clients.set(pid, this);
  }

  /** Notes the LISTEN and UNLISTEN statements `message` runs or prepares. */
  track(message: Uint8Array): void {
    const body = message.subarray(5);
    if (message[0] === QUERY) {
      this.#sent.push(...listenStatements(cString(body, 0)));
    } else if (message[0] === PARSE) {
      const name = cString(body, 0);
      const statements = listenStatements(cString(body, body.indexOf(0) + 1));
      if (statements.length > 0) this.#prepared.set(name, statements);
      else this.#prepared.delete(name);
    } else if (message[0] === BIND) {
      const statement = cString(body, body.indexOf(0) + 1);
      this.#sent.push(...this.#prepared.get(statement) ?? []);
    }
  }

  /** The statements sent since the last call. */
  executed(): ListenStatement[] {
    return this.#sent.splice(0);
  }

  /** Writes `data` after every earlier write; a closed connection swallows it. */
  write(data: Uint8Array<ArrayBuffer>): Promise<void> {
    this.#writing = this.#writing.then(() => writeAll(this.conn, data)).catch(() => {});
    return this.#writing;
  }
}

/** The channels each client LISTENs on. */
class Channels {
  #byClient = new Map<Client, Set<string>>();

  /** Applies `client`'s LISTEN and UNLISTEN statements, in order. */
  apply(client: Client, statements: ListenStatement[]): void {
    let own = this.#byClient.get(client);
    if (own === undefined) this.#byClient.set(client, own = new Set());
    for (const statement of statements) {
      if (statement.kind === "listen") own.add(statement.channel);
      else if (statement.channel === null) own.clear();
      else own.delete(statement.channel);
    }
  }

  /** Forgets `client`; returns the channels no client listens on any more. */
  remove(client: Client): string[] {
    const own = [...this.#byClient.get(client) ?? []];
    this.#byClient.delete(client);
    return own.filter((channel) => !this.listened(channel));
  }

  /** Whether any client listens on `channel`. */
  listened(channel: string): boolean {
    for (const own of this.#byClient.values()) if (own.has(channel)) return true;
    return false;
  }

  /** Every channel some client listens on. */
  all(): Set<string> {
    const all = new Set<string>();
    for (const own of this.#byClient.values()) for (const channel of own) all.add(channel);
    return all;
  }

  /** The clients listening on `channel`. */
  listeners(channel: string): Client[] {
    return [...this.#byClient].filter(([, own]) => own.has(channel)).map(([client]) => client);
  }
}

/**
 * Relays one client connection's messages to the session, an exchange at a time, once the client
 * has proven it knows the password (SCRAM-SHA-256, as PostgreSQL asks for it).
 */
async function serveConnection(shared: Shared, client: Client): Promise<void> {
  const { db, session, channels } = shared;
  const conn = client.conn;
  let buffer: Uint8Array = new Uint8Array(0);
  // Reads not yet joined to `buffer`: a large message is joined once, when whole.
  const reads: Uint8Array[] = [];
  let readBytes = 0;
  let needed = 0;
  let started = false;
  let login: Login | null = null;
  const pending: Uint8Array[] = [];
  const chunk = new Uint8Array(64 * 1024);
  try {
    while (true) {
      const read = await conn.read(chunk).catch(() => null);
      if (read === null) break;
      reads.push(chunk.slice(0, read));
      readBytes += read;
      if (buffer.length + readBytes < needed) continue;
      buffer = concat([buffer, ...reads.splice(0)]);
      readBytes = 0;
      needed = 0;
      while (true) {
        if (!started) {
          if (buffer.length < 8) break;
          const view = new DataView(buffer.buffer, buffer.byteOffset);
          const length = view.getInt32(0);
          if (buffer.length < length) {
            needed = length;
            break;
          }
          const code = view.getInt32(4);
          const message = buffer.slice(0, length);
          buffer = buffer.subarray(length);
          if (code === SSL_REQUEST || code === GSS_REQUEST) {
            await client.write(new TextEncoder().encode("N"));
            continue;
          }
          if (code === CANCEL_REQUEST) {
            if (message.length === 16) cancel(shared, view.getInt32(8), view.getInt32(12));
            return;
          }
          started = true;
          login = { startup: message, scram: shared.verifier.exchange(), step: "first" };
          await client.write(authentication(10, new TextEncoder().encode("SCRAM-SHA-256\0\0")));
          continue;
        }
        if (buffer.length < 5) break;
        const length = 1 + new DataView(buffer.buffer, buffer.byteOffset).getInt32(1);
        if (buffer.length < length) {
          needed = length;
          break;
        }
        const message = buffer.slice(0, length);
        buffer = buffer.subarray(length);
        if (message[0] === TERMINATE) return;
        if (login !== null) {
          const failure = await authenticate(client, login, message);
          if (failure !== null) {
            await client.write(failure);
            return;
          }
          if (login.step === "done") {
            await exchange(shared, client, [login.startup], true);
            login = null;
          }
          continue;
        }
        if (client.skippingToSync) {
          if (message[0] !== SYNC) continue;
          client.skippingToSync = false;
          await client.write(readyForQuery("I"));
          continue;
        }
        pending.push(message);
        if (EXCHANGE_END.has(message[0]) || message[0] === FLUSH) {
          await exchange(shared, client, pending.splice(0), message[0] !== FLUSH);
        }
      }
    }
  } finally {
    const forgotten = channels.remove(client);
    // A client gone while it holds the session (mid-exchange or mid-transaction) must leave it
    // as a new connection finds one: see abandon().
    if (session.holds(conn)) await abandon(db);
    // The session stops listening where the client was the last listener.
    if (forgotten.length > 0) {
      await session.acquire(conn);
      const unused = forgotten.filter((channel) => !channels.listened(channel));
      if (unused.length > 0) {
        // exec takes PGlite's query lock itself (runExclusive around it would deadlock).
        await db.exec(unused.map((channel) => `unlisten ${quoteIdentifier(channel)};`).join(""))
          .catch(() => {});
      }
    }
    session.release(conn);
    closeQuietly(conn);
  }
}

/** A connection's login: its StartupMessage, held back until its SCRAM exchange succeeds. */
interface Login {
  startup: Uint8Array;
  scram: ScramExchange;
  step: "first" | "final" | "done";
}

/**
 * Takes one of the client's SASL messages (`p`) of its login; the ErrorResponse to end the
 * connection with, or `null` to go on (`login.step` is `"done"` once the password is proven).
 */
async function authenticate(
  client: Client,
  login: Login,
  message: Uint8Array,
): Promise<Uint8Array<ArrayBuffer> | null> {
  if (message[0] !== PASSWORD_MESSAGE) {
    return errorResponse("08P01", "expected a SASL response, the password is required");
  }
  const body = message.subarray(5);
  const user = startupParameter(login.startup, "user");
  try {
    if (login.step === "first") {
      const mechanism = cString(body, 0);
      if (mechanism !== "SCRAM-SHA-256") {
        return errorResponse("28000", `SASL mechanism ${mechanism} is not SCRAM-SHA-256`);
      }
      const at = body.indexOf(0) + 1;
      const data = body.subarray(at + 4);
      const serverFirst = login.scram.first(new TextDecoder().decode(data));
      login.step = "final";
      await client.write(authentication(11, new TextEncoder().encode(serverFirst)));
      return null;
    }
    const serverFinal = login.scram.final(new TextDecoder().decode(body));
    if (serverFinal === null) {
      return errorResponse("28P01", `password authentication failed for user "${user}"`);
    }
    login.step = "done";
    await client.write(authentication(12, new TextEncoder().encode(serverFinal)));
    return null;
  } catch (error) {
    if (error instanceof ScramProtocolError) return errorResponse("08P01", error.message);
    throw error;
  }
}

/** A StartupMessage's parameter (after its length and protocol version: name, value pairs). */
function startupParameter(startup: Uint8Array, name: string): string {
  const fields = new TextDecoder().decode(startup.subarray(8)).split("\0");
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return "";
}

/** An Authentication message: its code, then `data`. */
function authentication(code: number, data: Uint8Array): Uint8Array<ArrayBuffer> {
  const body = new Uint8Array(4 + data.length);
  new DataView(body.buffer).setInt32(0, code);
  body.set(data, 4);
  return wireMessage("R", body);
}

/**
 * Ends what a client that went away left on the session, as PostgreSQL does when a backend's
 * client disconnects: whatever it ran since its last Sync is rolled back, and so is its open
 * transaction. A Parse that cannot succeed puts the session in the error state (which an error
 * the client already caused has done anyway: it then skips messages, a `rollback` included, up to
 * a Sync); the Sync ends that, rolling back an implicit transaction; the `rollback` ends an
 * explicit one, now failed. Without this, a client killed between an ErrorResponse and its Sync
 * left every later client's statements skipped, for good.
 */
async function abandon(db: PGlite): Promise<void> {
  const fail = wireMessage(
    "P",
    concat([
      new Uint8Array(1),
      new TextEncoder().encode("-- the client went away\n!\0"),
      new Uint8Array(2),
    ]),
  );
  try {
    await db.runExclusive(() =>
      db.execProtocolRawStream(concat([fail, wireMessage("S", new Uint8Array(0))]), {
        onRawData: () => {},
      })
    );
    if (db.isInTransaction()) await db.exec("rollback");
  } catch {
    // Nothing more to end.
  }
}

/**
 * A CancelRequest for connection `pid`: with its secret, a wait of that connection for the session
 * ends in an error. A statement PGlite is running cannot be interrupted (it runs on this process's
 * thread, which is why the request is only read once it is done); as in PostgreSQL, a request that
 * finds nothing to cancel does nothing.
 */
function cancel(shared: Shared, pid: number, secret: number): void {
  const client = shared.clients.get(pid);
  if (client === undefined || client.secret !== secret) return;
  shared.session.cancel(client.conn);
}

/**
 * Runs messages on the session and relays the replies; the session is released when they `end`
 * an exchange outside a transaction. Notifications in the replies go to their listeners; the
 * BackendKeyData of a startup is the client's own.
 */
async function exchange(
  shared: Shared,
  client: Client,
  messages: Uint8Array[],
  end: boolean,
): Promise<void> {
  const { db, session, channels } = shared;
  const conn = client.conn;
  try {
    await session.acquire(conn);
  } catch (error) {
    if (!(error instanceof CancelledWait)) throw error;
    // Nothing of the exchange ran; a waiting client holds no transaction, so it is idle after it.
    const failure = errorResponse("57014", error.message);
    if (end) await client.write(concat([failure, readyForQuery("I")]));
    else {
      client.skippingToSync = true;
      await client.write(failure);
    }
    return;
  }
  const raw: Uint8Array[] = [];
  for (const message of messages) client.track(message);
  const notifications: Uint8Array[] = [];
  try {
    for (const message of messages) {
      await db.runExclusive(() =>
        db.execProtocolRawStream(message, { onRawData: (data) => raw.push(data.slice()) })
      );
    }
    // An extended-protocol statement runs at its Execute, which a Sync ends.
    const statements = end ? client.executed() : [];
    if (statements.length > 0) {
      const before = channels.all();
      channels.apply(client, statements);
      // The session obeyed an UNLISTEN for every client: listen again where others still do.
      const unlistened = new Set(
        statements.flatMap((statement) =>
          statement.kind === "listen"
            ? []
            : statement.channel === null
            ? [...before]
            : [statement.channel]
        ),
      );
      const relisten = [...unlistened].filter((channel) => channels.listened(channel));
      if (relisten.length > 0) {
        await db.exec(relisten.map((channel) => `listen ${quoteIdentifier(channel)};`).join(""));
      }
    }
  } finally {
    if (end && !db.isInTransaction()) session.release(conn);
  }
  const replies: Uint8Array[] = [];
  for (const message of splitMessages(concat(raw))) {
    if (message[0] === NOTIFICATION_RESPONSE) notifications.push(message);
    else if (message[0] === BACKEND_KEY_DATA && message.length === 13) {
      const own = message.slice();
      const view = new DataView(own.buffer);
      view.setInt32(5, client.pid);
      view.setInt32(9, client.secret);
      replies.push(own);
    } else replies.push(message);
  }
  await client.write(concat(replies));
  for (const notification of notifications) {
    const channel = notificationChannel(notification);
    for (const listener of channels.listeners(channel)) void listener.write(notification.slice());
  }
}

const NOTIFICATION_RESPONSE = "A".charCodeAt(0);
const BACKEND_KEY_DATA = "K".charCodeAt(0);
const PASSWORD_MESSAGE = "p".charCodeAt(0);
const SYNC = "S".charCodeAt(0);

/** A wire-protocol message (either direction) of type `type` with `body`. */
function wireMessage(type: string, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(5 + body.length);
  out[0] = type.charCodeAt(0);
  new DataView(out.buffer).setInt32(1, 4 + body.length);
  out.set(body, 5);
  return out;
}

/** A ReadyForQuery with transaction status `status`. */
function readyForQuery(status: "I"): Uint8Array<ArrayBuffer> {
  return wireMessage("Z", new TextEncoder().encode(status));
}

/** An ErrorResponse of severity ERROR. */
function errorResponse(code: string, message: string): Uint8Array<ArrayBuffer> {
  const fields = ["SERROR", "VERROR", `C${code}`, `M${message}`]
    .map((field) => `${field}\0`).join("");
  return wireMessage("E", new TextEncoder().encode(`${fields}\0`));
}
const QUERY = "Q".charCodeAt(0);
const PARSE = "P".charCodeAt(0);
const BIND = "B".charCodeAt(0);

/** A LISTEN or UNLISTEN statement of a client; `channel` `null` is `UNLISTEN *`. */
type ListenStatement =
  | { kind: "listen"; channel: string }
  | { kind: "unlisten"; channel: string | null };

/** The LISTEN and UNLISTEN statements of SQL text, in order. */
function listenStatements(text: string): ListenStatement[] {
  if (!/listen/i.test(text)) return [];
  const found: ListenStatement[] = [];
  for (const statement of splitStatements(text)) {
    const match = statement.match(
      /^\s*(un)?listen\s+("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*|\*)\s*$/i,
    );
    if (match === null) continue;
    const target = match[2];
    const channel = target === "*"
      ? null
      : target.startsWith('"')
      ? target.slice(1, -1).replaceAll('""', '"')
      : target.toLowerCase();
    if (match[1] !== undefined) found.push({ kind: "unlisten", channel });
    else if (channel !== null) found.push({ kind: "listen", channel });
  }
  return found;
}

/** Splits SQL text at semicolons outside quotes and comments. */
function splitStatements(text: string): string[] {
  const statements: string[] = [];
  let current = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const close = text.indexOf(c, i + 1);
      const stop = close === -1 ? text.length : close + 1;
      current += text.slice(i, stop);
      i = stop;
    } else if (c === "-" && text[i + 1] === "-") {
      const close = text.indexOf("\n", i);
      i = close === -1 ? text.length : close;
    } else if (c === ";") {
      statements.push(current);
      current = "";
      i++;
    } else {
      current += c;
      i++;
    }
  }
  statements.push(current);
  return statements;
}

function cString(bytes: Uint8Array, from: number): string {
  const end = bytes.indexOf(0, from);
  return new TextDecoder().decode(bytes.subarray(from, end === -1 ? bytes.length : end));
}

/** A NotificationResponse's channel: after the type, the length and the sender's pid. */
function notificationChannel(message: Uint8Array): string {
  return cString(message, 9);
}

/** Splits a reply stream into whole backend messages. */
function splitMessages(data: Uint8Array): Uint8Array[] {
  const messages: Uint8Array[] = [];
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  let offset = 0;
  while (offset + 5 <= data.length) {
    const length = 1 + view.getInt32(offset + 1);
    messages.push(data.subarray(offset, offset + length));
    offset += length;
  }
  return messages;
}

function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

async function writeAll(conn: Deno.Conn, data: Uint8Array<ArrayBuffer>): Promise<void> {
  let written = 0;
  while (written < data.length) written += await conn.write(data.subarray(written));
}

function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch {
    // Already closed.
  }
}
