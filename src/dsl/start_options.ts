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
 * The longest debounce window (and `maxWaitSeconds`), in seconds: 7 days
 * (`sluice.max_debounce_seconds()`).
 *
 * @example Usage
 * ```ts
 * import { MAX_DEBOUNCE_SECONDS } from "@sluice/sluice";
 *
 * console.log(MAX_DEBOUNCE_SECONDS); // 604800
 * ```
 */
export const MAX_DEBOUNCE_SECONDS = 604800;

/**
 * The highest priority of a start (`sluice.max_priority()`); the lowest is `-MAX_PRIORITY`.
 *
 * @example Usage
 * ```ts
 * import { MAX_PRIORITY } from "@sluice/sluice";
 *
 * console.log(MAX_PRIORITY); // 1000
 * ```
 */
export const MAX_PRIORITY = 1000;

/**
 * How a start is debounced (docs/flow_control.md#debounced-starts): starts of the same name with
 * the same `key` collapse into one run, created with the last start's input once
 * `windowSeconds` went by without another start of that key.
 *
 * @example Usage
 * ```ts
 * import type { DebounceOptions } from "@sluice/sluice";
 *
 * const debounce: DebounceOptions = { key: "doc-42", windowSeconds: 10, maxWaitSeconds: 60 };
 * ```
 */
export interface DebounceOptions {
  /** What collapses: starts of one name with the same key. 1 to 255 characters. */
  readonly key: string;
  /**
   * The quiet period that ends the window, in whole seconds (1 to 604800): each start of the key
   * moves the run's start to `windowSeconds` after itself (the trailing edge).
   */
  readonly windowSeconds: number;
  /**
   * The longest the first start of a pending run waits, in whole seconds (`windowSeconds` to
   * 604800): under a steady stream of starts, the run starts at most this long after the first.
   *
   * @default {no cap: the run starts once the key has been quiet for a window}
   */
  readonly maxWaitSeconds?: number;
}

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
   * Debounces the start: starts of the same name with the same `debounce.key` within the window
   * collapse into one run, created with the last start's input when the window closes; every one
   * of them returns that run's id at once (the run exists from then on: `waitForRun` waits for it
   * meanwhile). Takes no `idempotencyKey`, `runId` or `concurrencyKey`.
   *
   * @default {none: every start creates a run at once}
   */
  readonly debounce?: DebounceOptions;
  /**
   * The run's priority, a whole number from -1000 to 1000: within a queue, the ready tasks of a
   * run of higher priority are read before those of lower priority, even behind a backlog; of
   * equal priority, first queued first (docs/flow_control.md#priorities). Every task of the run
   * has it; with `debounce`, the last start's priority is the run's.
   *
   * @default {0}
   */
  readonly priority?: number;
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

/** The start options as the SQL start functions take them (snake_case JSON). */
export type StartOptionsJson = {
  readonly idempotency_key?: string;
  readonly concurrency_key?: string;
  readonly priority?: number;
  readonly debounce?: {
    readonly key: string;
    readonly window_seconds: number;
    readonly max_wait_seconds?: number;
  };
};

/**
 * The start options as `sluice.check_start_options` takes them (snake_case JSON), after checking
 * each; `undefined` when none is set, so a plain start keeps its three-argument call.
 *
 * @throws {StartOptionError} When an option has a value of the wrong type or range.
 */
export function startOptionsJson(
  options: FlowControlStartOptions & { readonly runId?: string },
  action: string,
): StartOptionsJson | undefined {
  const { idempotencyKey, concurrencyKey, debounce, priority } = options;
  if (
    idempotencyKey === undefined && concurrencyKey === undefined && debounce === undefined &&
    priority === undefined
  ) {
    return undefined;
  }
  if (idempotencyKey !== undefined) checkKey(action, "idempotencyKey", idempotencyKey);
  if (concurrencyKey !== undefined) checkKey(action, "concurrencyKey", concurrencyKey);
  if (
    priority !== undefined &&
    (typeof priority !== "number" || !Number.isInteger(priority) ||
      Math.abs(priority) > MAX_PRIORITY)
  ) {
    throw new StartOptionError(
      action,
      "priority",
      priority,
      `a whole number from ${-MAX_PRIORITY} to ${MAX_PRIORITY}`,
    );
  }
  return {
    ...(idempotencyKey === undefined ? {} : { idempotency_key: idempotencyKey }),
    ...(concurrencyKey === undefined ? {} : { concurrency_key: concurrencyKey }),
    ...(priority === undefined ? {} : { priority }),
    ...(debounce === undefined ? {} : { debounce: debounceJson(options, action) }),
  };
}

function debounceJson(
  options: FlowControlStartOptions & { readonly runId?: string },
  action: string,
): StartOptionsJson["debounce"] {
  const { debounce, idempotencyKey } = options;
  if (typeof debounce !== "object" || debounce === null) {
    throw new StartOptionError(action, "debounce", debounce, "an object { key, windowSeconds }");
  }
  if (idempotencyKey !== undefined) {
    throw new StartOptionError(action, "debounce", debounce, "absent with an idempotencyKey");
  }
  if (options.runId !== undefined) {
    throw new StartOptionError(action, "runId", options.runId, "absent with debounce");
  }
  // A debounced run does not exist before it is due: its limited steps read their key from the
  // input (the step's concurrency.key) instead.
  if (options.concurrencyKey !== undefined) {
    throw new StartOptionError(
      action,
      "concurrencyKey",
      options.concurrencyKey,
      "absent with debounce (give the step's concurrency.key a path into the input)",
    );
  }
  checkKey(action, "debounce.key", debounce.key);
  const { windowSeconds, maxWaitSeconds } = debounce;
  checkSeconds(action, "debounce.windowSeconds", windowSeconds, 1);
  if (maxWaitSeconds === undefined) return { key: debounce.key, window_seconds: windowSeconds };
  checkSeconds(action, "debounce.maxWaitSeconds", maxWaitSeconds, windowSeconds);
  return { key: debounce.key, window_seconds: windowSeconds, max_wait_seconds: maxWaitSeconds };
}

function checkKey(action: string, option: string, key: unknown): void {
  if (typeof key !== "string" || key.length < 1 || [...key].length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw new StartOptionError(
      action,
      option,
      key,
      `a string of 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`,
    );
  }
}

function checkSeconds(action: string, option: string, value: unknown, min: number): void {
  if (
    typeof value !== "number" || !Number.isInteger(value) || value < min ||
    value > MAX_DEBOUNCE_SECONDS
  ) {
    throw new StartOptionError(
      action,
      option,
      value,
      `a whole number of seconds from ${min} to ${MAX_DEBOUNCE_SECONDS}`,
    );
  }
}

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
