/**
 * The Slack client: posts one alert with `chat.postMessage` and says what Slack answered, without
 * deciding about retries (each version does that its own way).
 *
 * @module
 */

/** One alert about one thread. */
export interface Alert {
  /** The thread the alert is about (sent as message metadata, so a post can be traced back). */
  readonly threadId: number;
  /** The message text. */
  readonly text: string;
}

/** What came of one post. */
export type PostResult =
  /** Slack accepted the message; `ts` is its timestamp. */
  | { readonly kind: "sent"; readonly ts: string }
  /** HTTP 429: post again after `retryAfterSeconds` (Slack's `Retry-After`). */
  | { readonly kind: "rate_limited"; readonly retryAfterSeconds: number }
  /**
   * Anything else: an HTTP error, a network error, or no answer within the timeout. With
   * `ambiguous`, Slack may have accepted the message (the request went out, the answer never
   * came back).
   */
  | {
    readonly kind: "failed";
    readonly reason: string;
    readonly ambiguous: boolean;
  };

/** Where and how to post. */
export interface SlackSettings {
  /** The `chat.postMessage` URL. */
  readonly url: string;
  /** The channel to post to. */
  readonly channel: string;
  /** How long to wait for Slack's answer, in milliseconds. */
  readonly timeoutMs: number;
}

/**
 * The settings from `SLACK_URL` (required), `SLACK_CHANNEL` (default `#community-alerts`) and
 * `SLACK_TIMEOUT_MS` (default 2000).
 *
 * @throws {TypeError} When `SLACK_URL` is missing or `SLACK_TIMEOUT_MS` is not a positive integer.
 */
export function slackFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): SlackSettings {
  const url = env.SLACK_URL;
  if (url === undefined || url === "") {
    throw new TypeError("Cannot post to Slack: SLACK_URL is not set");
  }
  const timeoutMs = Number(env.SLACK_TIMEOUT_MS ?? "2000");
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
    throw new TypeError(
      `Cannot post to Slack: SLACK_TIMEOUT_MS must be a positive integer, got ` +
        JSON.stringify(env.SLACK_TIMEOUT_MS),
    );
  }
  return { url, channel: env.SLACK_CHANNEL ?? "#community-alerts", timeoutMs };
}

/**
 * Posts `alert` once.
 *
 * @param slack Where and how to post.
 * @param alert The alert.
 * @param signal Aborts the post (the caller's deadline), on top of `slack.timeoutMs`.
 */
export async function postAlert(
  slack: SlackSettings,
  alert: Alert,
  signal?: AbortSignal,
): Promise<PostResult> {
  const timeout = AbortSignal.timeout(slack.timeoutMs);
  const abort = signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
  let response: Response;
  try {
    response = await fetch(slack.url, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({
        channel: slack.channel,
        text: alert.text,
        metadata: {
          event_type: "community_thread_alert",
          event_payload: { thread_id: alert.threadId },
        },
      }),
      signal: abort,
    });
  } catch (error) {
    const reason = timeout.aborted
      ? `no answer from Slack within ${slack.timeoutMs} ms`
      : `Slack unreachable: ${error instanceof Error ? error.message : String(error)}`;
    return { kind: "failed", reason, ambiguous: timeout.aborted };
  }
  const text = await response.text().catch(() => "");
  if (response.status === 429) {
    const retryAfter = Number(response.headers.get("retry-after") ?? "30");
    return {
      kind: "rate_limited",
      retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : 30,
    };
  }
  const body = parseJson(text);
  if (response.ok && body?.ok === true && typeof body.ts === "string") {
    return { kind: "sent", ts: body.ts };
  }
  const detail = typeof body?.error === "string" ? body.error : text.slice(0, 200);
  return {
    kind: "failed",
    reason: `Slack answered HTTP ${response.status}: ${detail}`,
    ambiguous: false,
  };
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text);
    return typeof value === "object" && value !== null ? value : undefined;
  } catch {
    return undefined;
  }
}
