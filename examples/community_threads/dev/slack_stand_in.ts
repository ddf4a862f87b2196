/**
 * A local stand-in for Slack's `chat.postMessage`, on loopback, for the scenario tests and the
 * benchmark: it records every post and answers each as scripted per thread — ok, 429 with
 * `Retry-After`, 500, accept and never answer (the answer is lost), or hold until released.
 *
 * @module
 */

/** How the stand-in answers one post. */
export type SlackBehaviour =
  /** Accept: answer `{ ok: true, ts }`. */
  | { readonly kind: "ok" }
  /** Refuse with HTTP 429 and `Retry-After`. */
  | { readonly kind: "rate_limited"; readonly retryAfterSeconds: number }
  /** Refuse with HTTP 500. */
  | { readonly kind: "server_error" }
  /** Accept the message, then never answer: the client times out not knowing. */
  | { readonly kind: "accept_then_hang" }
  /** Neither accept nor answer until {@linkcode SlackStandIn.release}; dropped if the client leaves. */
  | { readonly kind: "hold" };

/** One post the stand-in received. */
export interface SlackRequest {
  /** The thread of the alert (from the message metadata). */
  readonly threadId: number;
  /** The message text. */
  readonly text: string;
  /** When it arrived (`Date.now()`). */
  readonly receivedAt: number;
  /** How it was answered. */
  readonly behaviour: SlackBehaviour["kind"];
  /** Whether Slack accepted the message (it would show in the channel). */
  accepted: boolean;
  /** The message timestamp, once accepted. */
  ts?: string;
}

/** Options of {@linkcode startSlackStandIn}. */
export interface SlackStandInOptions {
  /** Milliseconds before an ok answer, as a real API's latency. @default {0} */
  readonly latencyMs?: number;
}

/** A running stand-in; disposing it answers whatever hangs and closes the server. */
export interface SlackStandIn extends AsyncDisposable {
  /** The `chat.postMessage` URL. */
  readonly url: string;
  /** Every post received, in arrival order. */
  readonly requests: readonly SlackRequest[];
  /** The posts Slack accepted: the alerts that reached the channel. */
  accepted(): SlackRequest[];
  /** The next posts about `threadId` get `behaviours`, in order; after them, `ok`. */
  script(threadId: number, ...behaviours: SlackBehaviour[]): void;
  /** Accepts and answers the held posts about `threadId` whose client still waits. */
  release(threadId: number): void;
  /** Resolves once `predicate` holds after a post arrives or changes (or already holds). */
  waitFor(
    predicate: () => boolean,
    what: string,
    timeoutMs?: number,
  ): Promise<void>;
}

/** Starts the stand-in on a free loopback port. */
export function startSlackStandIn(
  options: SlackStandInOptions = {},
): SlackStandIn {
  const requests: SlackRequest[] = [];
  const scripts = new Map<number, SlackBehaviour[]>();
  const held = new Map<number, (() => void)[]>();
  const waiters = new Set<() => void>();
  const closing = new AbortController();
  let sequence = 0;
  const changed = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const accept = (request: SlackRequest) => {
    request.accepted = true;
    request.ts = `${Math.floor(Date.now() / 1000)}.${String(++sequence).padStart(6, "0")}`;
    changed();
    return Response.json({ ok: true, channel: "C0COMMUNITY", ts: request.ts });
  };
  // Listens on both signals itself: a combined AbortSignal.any() that only a listener refers to
  // may be collected before it fires, and a hung handler then never returns, so the server's
  // shutdown waits for it forever.
  const untilGone = (signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal.aborted || closing.signal.aborted) return resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
      closing.signal.addEventListener("abort", () => resolve(), { once: true });
    });

  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (req) => {
      const body = await req.json().catch(() => ({}));
      const threadId = Number(body?.metadata?.event_payload?.thread_id);
      const behaviour = scripts.get(threadId)?.shift() ?? { kind: "ok" };
      const request: SlackRequest = {
        threadId,
        text: String(body?.text ?? ""),
        receivedAt: Date.now(),
        behaviour: behaviour.kind,
        accepted: false,
      };
      requests.push(request);
      changed();
      switch (behaviour.kind) {
        case "ok":
          if (options.latencyMs) {
            await new Promise((r) => setTimeout(r, options.latencyMs));
          }
          return accept(request);
        case "rate_limited":
          return Response.json({ ok: false, error: "ratelimited" }, {
            status: 429,
            headers: { "retry-after": String(behaviour.retryAfterSeconds) },
          });
        case "server_error":
          return Response.json({ ok: false, error: "internal_error" }, {
            status: 500,
          });
        case "accept_then_hang":
          accept(request);
          await untilGone(req.signal);
          return new Response(null, { status: 504 });
        case "hold": {
          const released = new Promise<boolean>((resolve) => {
            held.set(threadId, [
              ...(held.get(threadId) ?? []),
              () => resolve(true),
            ]);
            void untilGone(req.signal).then(() => resolve(false));
          });
          if (await released && !req.signal.aborted) return accept(request);
          changed();
          return new Response(null, { status: 504 });
        }
      }
    },
  );

  return {
    url: `http://127.0.0.1:${server.addr.port}/api/chat.postMessage`,
    requests,
    accepted: () => requests.filter((request) => request.accepted),
    script(threadId, ...behaviours) {
      scripts.set(threadId, [...(scripts.get(threadId) ?? []), ...behaviours]);
    },
    release(threadId) {
      for (const resolve of held.get(threadId) ?? []) resolve();
      held.delete(threadId);
    },
    waitFor(predicate, what, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(
            new Error(
              `Slack stand-in: timed out after ${timeoutMs} ms waiting for ${what}`,
            ),
          );
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async [Symbol.asyncDispose]() {
      closing.abort();
      await server.shutdown();
    },
  };
}
