/**
 * The flow-control options of a start (docs/flow_control.md), checked before anything is sent,
 * and their errors: shared by `startFlow()` and the browser's `startRun()`. No I/O.
 *
 * @module
 */

/**
 * The longest idempotency key, in characters (`sluice.max_idempotency_key_length()`).
 *
 * @example Usage
 * ```ts
 * import { MAX_IDEMPOTENCY_KEY_LENGTH } from "@sluice/sluice";
 *
 * console.log(MAX_IDEMPOTENCY_KEY_LENGTH); // 255
 * ```
 */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * The flow-control options every start path takes (`startFlow()`, the browser's `startRun()`).
 *
 * @example Usage
 * ```ts
 * import type { FlowControlStartOptions } from "@sluice/sluice";
 *
 * const options: FlowControlStartOptions = { idempotencyKey: "stripe-evt_1NqX" };
 * ```
 */
export interface FlowControlStartOptions {
  /**
   * Makes the start idempotent: a start of the same name (alias or concrete slug) with a key an
   * earlier start used returns that start's run instead of creating another, as long as that run
   * exists (until `prune` deletes it once finished). The same key with another input throws
   * `IdempotencyConflictError`. 1 to 255 characters.
   *
   * @default {none: every start creates a run}
   */
  readonly idempotencyKey?: string;
  /**
   * The key the run's concurrency-limited steps count under when they read no key from the input
   * (docs/flow_control.md#concurrency-limits). 1 to 255 characters.
   *
   * @default {none: those steps share one limit}
   */
  readonly concurrencyKey?: string;
}

/**
 * Thrown before anything is sent when a start option has a value of the wrong type or range; the
 * message names the option and the value.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, StartOptionError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "orders", {}, { idempotencyKey: "" });
 * } catch (error) {
 *   if (error instanceof StartOptionError) console.error(error.option, error.value);
 * }
 * ```
 */
export class StartOptionError extends TypeError {
  /** Always `"StartOptionError"`. */
  override name = "StartOptionError";
  /** The option, as the caller spelled it (e.g. `idempotencyKey`). */
  readonly option: string;
  /** The offending value. */
  readonly value: unknown;

  /**
   * Creates the error.
   *
   * @param action What was refused, e.g. `Cannot start flow "orders"`.
   * @param option The option.
   * @param value The offending value.
   * @param rule What the value must be.
   */
  constructor(action: string, option: string, value: unknown, rule: string) {
    super(`${action}: ${option} must be ${rule}, got ${describe(value)}`);
    this.option = option;
    this.value = value;
  }
}

/**
 * Thrown when a start's idempotency key already started a run of the same name with another
 * input (SQLSTATE `SLI01`): a key names one piece of work, so a retry passes the same input and
 * new work takes a new key. Nothing was written; `runId` is the run the key started.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, IdempotencyConflictError, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * try {
 *   await startFlow(sql, "orders", { orderId: 8 }, { idempotencyKey: "order-7" });
 * } catch (error) {
 *   if (error instanceof IdempotencyConflictError) console.error(error.runId);
 * }
 * ```
 */
export class IdempotencyConflictError extends Error {
  /** Always `"IdempotencyConflictError"`. */
  override name = "IdempotencyConflictError";
  /** The name the start used: an alias or a concrete slug. */
  readonly flowRef: string;
  /** The key given. */
  readonly idempotencyKey: string;
  /** The run the key started, with another input. */
  readonly runId: string;

  /**
   * Creates the error; the message says what to do.
   *
   * @param fields The name started, the key and the run the key started.
   * @param options The database error, as `cause`.
   */
  constructor(
    fields: { readonly flowRef: string; readonly idempotencyKey: string; readonly runId: string },
    options?: ErrorOptions,
  ) {
    super(
      `Cannot start flow ${JSON.stringify(fields.flowRef)}: idempotency key ${
        JSON.stringify(fields.idempotencyKey)
      } already started run ${fields.runId} with another input; a retry passes the same input, ` +
        "new work takes a new key",
      options,
    );
    this.flowRef = fields.flowRef;
    this.idempotencyKey = fields.idempotencyKey;
    this.runId = fields.runId;
  }
}

/**
 * The start options as `sluice.check_start_options` takes them (snake_case JSON), after checking
 * each; `undefined` when none is set, so a plain start keeps its three-argument call.
 *
 * @throws {StartOptionError} When an option has a value of the wrong type or range.
 */
export function startOptionsJson(
  options: FlowControlStartOptions,
  action: string,
): Record<string, string | number> | undefined {
  const json: Record<string, string> = {};
  for (const [option, field] of OPTION_FIELDS) {
    const value = options[option];
    if (value === undefined) continue;
    if (
      typeof value !== "string" || value.length < 1 ||
      [...value].length > MAX_IDEMPOTENCY_KEY_LENGTH
    ) {
      throw new StartOptionError(
        action,
        option,
        value,
        `a string of 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
      );
    }
    json[field] = value;
  }
  return Object.keys(json).length === 0 ? undefined : json;
}

/** Each start option and its name in `sluice.check_start_options`. */
const OPTION_FIELDS = [
  ["idempotencyKey", "idempotency_key"],
  ["concurrencyKey", "concurrency_key"],
] as const;

/**
 * The typed error for SQLSTATE `SLI01` (an idempotency key that started a run with another
 * input), else `undefined`. `detail` is the database error's detail (JSON text).
 */
export function idempotencyConflictOf(
  error: { readonly code?: unknown; readonly detail?: unknown },
  flowRef: string,
  cause: unknown,
): IdempotencyConflictError | undefined {
  if (error.code !== "SLI01" || typeof error.detail !== "string") return undefined;
  const fields = JSON.parse(error.detail) as { idempotency_key: string; run_id: string };
  return new IdempotencyConflictError(
    { flowRef, idempotencyKey: fields.idempotency_key, runId: fields.run_id },
    { cause },
  );
}

function describe(value: unknown): string {
  if (typeof value === "string") {
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  }
  if (typeof value === "number" || typeof value === "boolean" || value === null) {
    return String(value);
  }
  return typeof value;
}
