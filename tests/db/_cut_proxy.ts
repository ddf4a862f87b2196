/**
 * A TCP proxy for tests of connections cut by the network: once armed, it forwards the next
 * complete answer of the server and closes both sides at once, so the client reads the answer and
 * the end of the connection together (no TLS shutdown, no Terminate).
 *
 * @module
 */

/** ReadyForQuery ('Z', length 5, status): the last six bytes of every plaintext answer. */
function endsWithReadyForQuery(bytes: Uint8Array): boolean {
  return bytes.length >= 6 && bytes[bytes.length - 6] === 0x5a && bytes[bytes.length - 5] === 0 &&
    bytes[bytes.length - 2] === 5;
}

/** Options of {@linkcode cutAfterAnswerProxy}. */
export interface CutAfterAnswerProxyOptions {
  /**
   * Whether a chunk the server sent ends an answer. Over TLS the proxy sees only ciphertext: there
   * every chunk counts (the server sends a short answer as one record, read as one chunk).
   *
   * @default {endsWithReadyForQuery}
   */
  readonly endsAnswer?: (chunk: Uint8Array) => boolean;
}

/**
 * A running proxy; disposing it closes its listener and every connection, and resolves once
 * every read and write it had in flight has ended (nothing left for the test's sanitizers).
 */
export interface CutAfterAnswerProxy extends AsyncDisposable {
  /** `url` with the proxy's host and port. */
  readonly url: string;
  /** Cuts the connection that carries the next complete answer. */
  arm(): void;
}

/**
 * Starts a proxy on a free port of 127.0.0.1 to the server of `url`.
 *
 * @param url The connection URL of the server.
 * @param options How the proxy recognises the end of an answer.
 * @returns The proxy.
 */
export function cutAfterAnswerProxy(
  url: string,
  options: CutAfterAnswerProxyOptions = {},
): CutAfterAnswerProxy {
  const endsAnswer = options.endsAnswer ?? endsWithReadyForQuery;
  const target = new URL(url);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  let armed = false;
  const pending = new Set<Promise<unknown>>();
  const track = (promise: Promise<unknown>) => {
    const settled = promise.catch(() => {}).finally(() => pending.delete(settled));
    pending.add(settled);
  };
  const close = (conn: Deno.Conn) => {
    conns.delete(conn);
    try {
      conn.close();
    } catch {
      // Already closed by its peer.
    }
  };
  track((async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname: target.hostname, port: Number(target.port) });
      conns.add(client).add(server);
      track(client.readable.pipeTo(server.writable));
      track((async () => {
        const buffer = new Uint8Array(64 * 1024);
        for (;;) {
          const n = await server.read(buffer).catch(() => null);
          if (n === null) break;
          const chunk = buffer.subarray(0, n);
          if (await client.write(chunk).catch(() => null) === null) break;
          if (armed && endsAnswer(chunk)) {
            armed = false;
            close(client);
            close(server);
            break;
          }
        }
        close(client);
        close(server);
      })());
    }
  })());
  const proxied = new URL(url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String((listener.addr as Deno.NetAddr).port);
  return {
    url: proxied.href,
    arm() {
      armed = true;
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const conn of [...conns]) close(conn);
      while (pending.size > 0) await Promise.all([...pending]);
    },
  };
}
