// Stand-ins for the two Supabase servers the browser client talks to, over real HTTP and real
// WebSockets, in front of the test's real PostgreSQL:
// - the Data API's RPC endpoint (`POST /rest/v1/rpc/<name>`, schema from `Content-Profile`),
//   which runs the function as one fixed database role (the real one takes it from the JWT), with
//   the request's headers in the setting request.headers as PostgREST sets them;
// - Realtime's WebSocket (Phoenix protocol, serializer 2.0.0 JSON frames): joins, heartbeats,
//   and the broadcasts a stand-in `realtime.send` recorded in `realtime.sent`, relayed to the
//   sockets joined to their topic. It admits every join (no authorization policies).
import type { Sql } from "postgres";

type Frame = [string | null, string | null, string, string, Record<string, unknown>];

/** The running stand-ins. */
export interface SupabaseStandIn extends AsyncDisposable {
  /** The project URL to give `createClient`. */
  readonly url: string;
  /** Closes every Realtime socket, as a network failure would. */
  dropSockets(): void;
  /** How many Realtime joins were answered (rejoins after a drop included). */
  readonly joins: number;
}

/** Starts both stand-ins; RPCs run as `role`. */
export function startSupabaseStandIn(sql: Sql, role: string): SupabaseStandIn {
  const sockets = new Map<WebSocket, Set<string>>();
  let joins = 0;
  let lastSent = 0;
  let relaying = Promise.resolve();

  const relay = async () => {
    const rows = await sql<{ id: string; topic: string; event: string; payload: unknown }[]>`
      select id, topic, event, payload from realtime.sent where id > ${lastSent} order by id`;
    for (const row of rows) {
      lastSent = Number(row.id);
      const topic = `realtime:${row.topic}`;
      for (const [socket, topics] of sockets) {
        if (!topics.has(topic) || socket.readyState !== WebSocket.OPEN) continue;
        const frame: Frame = [null, null, topic, "broadcast", {
          type: "broadcast",
          event: row.event,
          payload: row.payload,
        }];
        socket.send(JSON.stringify(frame));
      }
    }
  };
  const timer = setInterval(() => {
    relaying = relaying.then(relay).catch(() => {});
  }, 20);

  const onSocket = (socket: WebSocket) => {
    sockets.set(socket, new Set());
    socket.onmessage = async (message) => {
      const [joinRef, ref, topic, event] = JSON.parse(String(message.data)) as Frame;
      const reply = (response: Record<string, unknown>) =>
        socket.send(JSON.stringify([joinRef, ref, topic, "phx_reply", { status: "ok", response }]));
      if (event === "phx_join") {
        // Broadcasts recorded before the join are not delivered, as on Realtime.
        await relaying;
        sockets.get(socket)?.add(topic);
        joins++;
        reply({ postgres_changes: [] });
      } else if (event === "phx_leave") {
        sockets.get(socket)?.delete(topic);
        reply({});
      } else {
        reply({});
      }
    };
    socket.onclose = () => sockets.delete(socket);
  };

  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname === "/realtime/v1/websocket") {
      const { socket, response } = Deno.upgradeWebSocket(req);
      onSocket(socket);
      return response;
    }
    const rpc = /^\/rest\/v1\/rpc\/([a-z_]+)$/.exec(url.pathname);
    if (rpc === null || req.method !== "POST") return new Response("not found", { status: 404 });
    const schema = req.headers.get("content-profile") ?? "public";
    const args = await req.json() as Record<string, unknown>;
    try {
      const result = await sql.begin(async (tx) => {
        await tx.unsafe(`set local role ${role}`);
        // As PostgREST does: the request's headers, lower-cased, as JSON in request.headers.
        await tx`select pg_catalog.set_config('request.headers', ${
          JSON.stringify(Object.fromEntries(req.headers))
        }, true)`;
        const named = Object.keys(args).map((name, i) => `${name} => $${i + 1}`).join(", ");
        const [row] = await tx.unsafe(
          `select ${schema}.${rpc[1]}(${named}) as result`,
          // As given: postgres.js serializes each by the parameter type the server describes,
          // so a jsonb argument is encoded once (JSON text of a string would be a JSON string).
          Object.values(args) as never[],
        );
        return row.result;
      });
      return Response.json(result);
    } catch (error) {
      const { code, message, detail } = error as {
        code?: string;
        message: string;
        detail?: string;
      };
      return Response.json({ code, message, details: detail ?? null, hint: null }, {
        status: code === "42501" ? 403 : 400,
      });
    }
  });

  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    dropSockets() {
      for (const socket of sockets.keys()) socket.close();
    },
    get joins() {
      return joins;
    },
    async [Symbol.asyncDispose]() {
      clearInterval(timer);
      await relaying;
      for (const socket of sockets.keys()) socket.close();
      await server.shutdown();
    },
  };
}
