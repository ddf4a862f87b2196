/**
 * The respawn of an ending isolate: it claims the respawn in PostgreSQL (exactly one of the
 * isolates that saw the same `last_invoked_at` wins, and only while the function is enabled and
 * not paused), then calls its own function URL once, with the same bearer secret, so the platform
 * starts a fresh isolate whose first request starts a worker.
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { claimRespawn } from "../db/edge_queries.ts";
import { describeError } from "../worker/describe_error.ts";
import type { Logger } from "../worker/logger.ts";
import { noSecretMessage } from "./_host_config.ts";

/** Longest wait for the successor's answer (a cold start that compiles the flow first). */
const SUCCESSOR_TIMEOUT_MS = 10_000;

/** What an ending isolate knows when it asks for a successor. */
export interface Respawn {
  readonly sql: Sql;
  readonly functionName: string;
  readonly isolateId: string;
  /** `last_invoked_at` as read before the worker started: the claim's expected value. */
  readonly seenInvokedAt: string | null;
  readonly selfUrl: URL | null;
  readonly secret: string | null;
  /** Why the isolate ends. */
  readonly reason: string;
  readonly workerId: string;
}

/** Claims the respawn and, when this isolate won it, requests the successor. Never rejects. */
export async function claimAndRequestSuccessor(request: Respawn, logger: Logger): Promise<void> {
  const fields = { worker_id: request.workerId, reason: request.reason };
  if (request.selfUrl === null) {
    logger.error(
      "cannot request a successor: the function URL is unknown; set SUPABASE_URL or pass selfUrl",
      fields,
    );
    return;
  }
  if (request.secret === null) {
    logger.error(noSecretMessage(request.functionName), fields);
    return;
  }
  let claimed: boolean;
  try {
    claimed = await claimRespawn(request.sql, request.functionName, request.seenInvokedAt);
  } catch (error) {
    logger.error("cannot claim the respawn: no successor requested", {
      ...fields,
      error: describeError(error),
    });
    return;
  }
  if (!claimed) {
    logger.info(
      "no successor requested: the function is disabled or restart-paused, or another " +
        "isolate already requested one",
      fields,
    );
    return;
  }
  await requestSuccessor({
    url: request.selfUrl,
    secret: request.secret,
    body: {
      reason: "respawn",
      ending: request.reason,
      predecessor: { ...fields, isolate_id: request.isolateId },
    },
    timeoutMs: SUCCESSOR_TIMEOUT_MS,
    logFields: fields,
  }, logger);
}

/** What the successor request needs. */
interface SuccessorRequest {
  readonly url: URL;
  readonly secret: string;
  /** Sent as the JSON body, for the successor's and the platform's logs. */
  readonly body: Readonly<Record<string, unknown>>;
  /** Longest wait for one attempt's response. */
  readonly timeoutMs: number;
  /** Added to every record logged about the request. */
  readonly logFields: Readonly<Record<string, unknown>>;
}

/** Attempts at most; only failures that say nothing about the successor are tried again. */
const MAX_ATTEMPTS = 3;
const RETRY_DELAY_MS = 500;

/**
 * Posts to the function URL and logs what came back. A network error, or a 500, 502 or 504
 * (nothing started, or a gateway failed) is tried again; any other answer is final: a 503 means
 * the function is disabled or paused, or the request reached an isolate that is itself ending.
 * A timeout is final too: the successor may be starting.
 *
 * @returns Whether the successor answered with a 2xx status.
 */
async function requestSuccessor(
  request: SuccessorRequest,
  logger: Logger,
): Promise<boolean> {
  for (let attempt = 1;; attempt++) {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), request.timeoutMs);
    let status: number;
    let answer: unknown;
    try {
      const response = await fetch(request.url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${request.secret}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(request.body),
        signal: timeout.signal,
      });
      status = response.status;
      const text = await response.text();
      try {
        answer = JSON.parse(text);
      } catch {
        answer = text.slice(0, 300);
      }
    } catch (error) {
      clearTimeout(timer);
      if (timeout.signal.aborted) {
        // The request went out and may well be starting a worker: asking again could start two.
        logger.error("successor request timed out: the successor may or may not have started", {
          ...request.logFields,
          attempts: attempt,
          timeout_ms: request.timeoutMs,
        });
        return false;
      }
      if (attempt < MAX_ATTEMPTS) {
        logger.warn("successor request failed: retrying", {
          ...request.logFields,
          attempt,
          error: describeError(error),
        });
        await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
        continue;
      }
      logger.error("successor request failed: no successor started", {
        ...request.logFields,
        attempts: attempt,
        error: describeError(error),
      });
      return false;
    }
    clearTimeout(timer);
    if (status >= 200 && status < 300) {
      logger.info("successor requested", {
        ...request.logFields,
        http_status: status,
        successor: answer,
      });
      return true;
    }
    if ((status === 500 || status === 502 || status === 504) && attempt < MAX_ATTEMPTS) {
      logger.warn("successor request failed: retrying", {
        ...request.logFields,
        attempt,
        http_status: status,
      });
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
      continue;
    }
    logger.error("successor request refused: no successor started", {
      ...request.logFields,
      attempts: attempt,
      http_status: status,
      successor: answer,
    });
    return false;
  }
}
