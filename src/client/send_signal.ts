/**
 * `sendSignal`: completes the steps waiting on a signal key (docs/waits.md).
 *
 * @module
 */

import type { Queryable } from "../db/driver/postgres.ts";
import { sendSignalRow } from "../db/client_queries.ts";
import { toJsonText } from "../dsl/json_text.ts";
import { DEFAULT_MAX_JSON_BYTES } from "../dsl/limits.ts";
import { SignalIdConflictError } from "./errors.ts";
import { limitError } from "./start_flow.ts";
import { SpanKind, SpanStatusCode, trace } from "../telemetry/otel_api.ts";
import { INSTRUMENTATION_SCOPE } from "../telemetry/scope.ts";

/** The longest signal key and signal id (`sluice.max_signal_key_length()`). */
const MAX_SIGNAL_KEY_LENGTH = 1000;

/**
 * What to send.
 *
 * @example Usage
 * ```ts
 * import type { SendSignalOptions } from "@sluice/sluice";
 *
 * const options: SendSignalOptions = {
 *   key: "refund:r_42",
 *   payload: { approved: true },
 *   signalId: "decision-r_42",
 * };
 * ```
 */
export interface SendSignalOptions {
  /** The key the waiting steps wait on (1 to 1,000 characters). */
  readonly key: string;
  /** The waiting steps' output (a JSON value). */
  readonly payload: unknown;
  /**
   * The caller's id of this signal (1 to 1,000 characters): a signal id sent before changes
   * nothing (`outcome: "duplicate"`), so a redelivered webhook is harmless.
   */
  readonly signalId: string;
}

/**
 * What `sendSignal` did.
 *
 * @example Usage
 * ```ts
 * import type { SendSignalResult } from "@sluice/sluice";
 *
 * const result: SendSignalResult = { signalId: "s1", outcome: "sent", released: 1 };
 * ```
 */
export interface SendSignalResult {
  /** The signal id. */
  readonly signalId: string;
  /** `sent`: recorded now. `duplicate`: this signal id was sent before; nothing changed. */
  readonly outcome: "sent" | "duplicate";
  /** How many waiting steps it completed now (a signal no step waits for yet is kept 7 days). */
  readonly released: number;
}

/**
 * Sends a signal: every step waiting on `key` completes with `payload` as its output and its
 * dependents start, in one transaction, and the signal is consumed. A signal no step waits for
 * yet is kept for 7 days: the first step of a run started before it was sent that starts waiting
 * on the key consumes it (docs/waits.md#signals). Idempotent by `signalId` while the signal is
 * kept. Pass a transaction (`sql.begin(async (tx) => sendSignal(tx, ...))`) to send it with the
 * application's own writes: a rolled-back signal is never seen.
 *
 * @param sql A client or transaction.
 * @param options The key, payload and signal id.
 * @returns Whether it was sent now and how many waits it released.
 * @throws {TypeError} When the key or signal id is not a string of 1 to 1,000 characters.
 * @throws {JsonValueError} When the payload is not a JSON value.
 * @throws {JsonSizeError} When the payload is larger than 16 MiB as JSON.
 * @throws {LimitExceededError} When the database refuses the payload: over 16 MiB, or over the
 * `max_output_bytes` of a flow that waits on the key (SQLSTATE `SLL01`).
 * @throws {SignalIdConflictError} When the signal id was sent with another key.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, sendSignal } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * await sendSignal(sql, { key: "refund:r_42", payload: { approved: true }, signalId: "d-r_42" });
 * ```
 */
export async function sendSignal(
  sql: Queryable,
  options: SendSignalOptions,
): Promise<SendSignalResult> {
  for (const [name, value] of [["key", options.key], ["signalId", options.signalId]] as const) {
    if (typeof value !== "string" || value.length === 0 || value.length > MAX_SIGNAL_KEY_LENGTH) {
      throw new TypeError(
        `Cannot send signal: ${name} must be a string of 1 to ${MAX_SIGNAL_KEY_LENGTH} characters, got ${
          typeof value === "string" ? `${value.length} characters` : typeof value
        }`,
      );
    }
  }
  const payloadJson = toJsonText(options.payload === undefined ? null : options.payload, {
    action: `Cannot send signal ${JSON.stringify(options.signalId)}`,
    root: "payload",
    maxBytes: DEFAULT_MAX_JSON_BYTES,
  });
  // A PRODUCER span in the caller's trace (a handler's, a request's): the sent signal shows there.
  const span = trace.getTracer(INSTRUMENTATION_SCOPE).startSpan("sluice.signal send", {
    kind: SpanKind.PRODUCER,
    attributes: { "sluice.signal.key": options.key, "sluice.signal.id": options.signalId },
  });
  try {
    const row = await sendSignalRow(sql, options.key, payloadJson, options.signalId);
    span.setAttributes({
      "sluice.signal.outcome": row.outcome,
      "sluice.signal.released": row.released,
    });
    return { signalId: row.signal_id, outcome: row.outcome, released: row.released };
  } catch (error) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: String(error) });
    const { code, detail } = error as { code?: unknown; detail?: unknown };
    if (code === "SLS01" && typeof detail === "string") {
      const fields = JSON.parse(detail) as { signal_id: string; key: string; existing_key: string };
      throw new SignalIdConflictError({
        signalId: fields.signal_id,
        key: fields.key,
        existingKey: fields.existing_key,
      }, { cause: error });
    }
    throw limitError(error);
  } finally {
    span.end();
  }
}
