/**
 * The successor request: an ending isolate calls its own function URL once, with the same bearer
 * secret, so the platform starts a fresh isolate whose first request starts a worker.
 *
 * @module
 */

import { describeError } from "./_describe_error.ts";
import type { Logger } from "../worker/logger.ts";

/** What the successor request needs. */
export interface SuccessorRequest {
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
export async function requestSuccessor(
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
