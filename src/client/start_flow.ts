/**
 * `startFlow()`: the producer's entry point. A concrete flow object starts that concrete flow
 * (`sluice.start_flow_version`); a deployed flow or a name starts through the alias first
 * (`sluice.start_flow`).
 *
 * @module
 */

import type { Queryable } from "../db/driver/postgres.ts";
import { startFlowRun } from "../db/client_queries.ts";
import type { Json } from "../dsl/json.ts";
import { assertMaxBytes, DEFAULT_MAX_JSON_BYTES, toJsonText } from "../dsl/json_text.ts";
import { routingOf, startRefOf } from "../dsl/routing.ts";
import {
  type FlowControlStartOptions,
  idempotencyConflictOf,
  startOptionsJson,
} from "../dsl/start_options.ts";
import type { DeployableFlow, FlowInput } from "../dsl/types.ts";
import { startInput } from "../dsl/start_input.ts";
import { assertUuid } from "../dsl/uuid.ts";
import { FlowNotFoundError, LimitExceededError } from "./errors.ts";
import { flowAccessErrorOf } from "./_flow_access.ts";
import { context } from "../telemetry/otel_api.ts";
import { traceparentOf } from "../telemetry/trace_context.ts";
import { notInstalledError } from "../deploy/not_installed.ts";

/**
 * Options of {@linkcode startFlow}.
 *
 * @example Usage
 * ```ts
 * import type { StartFlowOptions } from "@sluice/sluice";
 *
 * const options: StartFlowOptions = { runId: crypto.randomUUID() };
 * ```
 */
export interface StartFlowOptions extends FlowControlStartOptions {
  /**
   * The run id to use (a UUID): starting a run id that exists fails. With an `idempotencyKey`,
   * the id of a new run only (a start the key already made returns that run's id).
   *
   * @default {a random UUID chosen by the database}
   */
  readonly runId?: string;
  /**
   * The largest input accepted, in bytes of its JSON text (UTF-8). A larger input is refused with
   * a `JsonSizeError` before anything is written. The database enforces the flow's own limit
   * regardless (`LimitExceededError`).
   *
   * @default {the concrete flow's `maxInputBytes`, else 16777216 (16 MiB)}
   */
  readonly maxInputBytes?: number;
}

/**
 * Starts a run of a flow and returns its id, with the input typed as that flow's input. The
 * run's first tasks are queued in the same statement, so on a transaction (`sql.begin(async
 * (tx) => ...)`) the run, its tasks and their messages commit or roll back with the caller's own
 * writes.
 *
 * A concrete flow (a `Flow` or a `withStepQueues()` flow) starts exactly that flow, by its
 * concrete slug, even when an alias of the same name now points at another version: the input
 * type is that version's. A `DeployedFlow` starts through its alias, on the flow the alias points
 * at when the run starts; the run records both (`flowSlug`, `startedVia`).
 *
 * @param sql The database client, or a transaction.
 * @param flow The flow: concrete, or deployed (started through its alias).
 * @param input The run input.
 * @param options The run id to use, the input size limit and the flow-control options
 * (docs/flow_control.md).
 * @returns The run id: with an `idempotencyKey` an earlier start of the same name used, that
 * start's run; with `debounce`, the id of the pending run, created when the window closes.
 * @throws {TypeError} When `runId` is not a UUID.
 * @throws {StartOptionError} When `idempotencyKey` is not a string of 1 to 255 characters, or
 * `debounce` is malformed (a key of 1 to 255 characters, whole seconds from 1 to 604800, a
 * `maxWaitSeconds` of at least `windowSeconds`, no `idempotencyKey` or `runId` with it), or
 * `priority` is not a whole number from -1000 to 1000.
 * @throws {IdempotencyConflictError} When `idempotencyKey` already started a run of the same name
 * with another input. Nothing is written.
 * @throws {JsonValueError} When the input is not JSON (`NaN`, a function, a `Date`, `undefined`,
 * ...) or holds a string Postgres cannot store (`\u0000`); the error names the path, e.g.
 * `input.total: NaN is not JSON`. Nothing is written.
 * @throws {JsonSizeError} When the input's JSON text is larger than `maxInputBytes`.
 * @throws {InputValidationError} When the flow has an input schema (`new Flow({ slug, input })`)
 * and the input does not match it; `issues` lists each problem with its path. Nothing is written.
 * With a schema, the run starts with the schema's value (its output).
 * @throws {RangeError} When `maxInputBytes` is not a positive integer.
 * @throws {LimitExceededError} When the database refuses the input over the flow's
 * `max_input_bytes`, or a root map over its `max_map_tasks` (SQLSTATE `SLL01`).
 * @throws {FlowNotFoundError} When no flow (or alias) has that name: a flow exists once a worker
 * for it has started and compiled it.
 * @throws {Error} From the database when the input is `null`, or a root map step gets an input
 * that is not an array.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, defineDeployedFlow, Flow, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const ordersV2 = new Flow<{ orderId: number }>({ slug: "orders_v2" })
 *   .step({ slug: "load" }, (input) => ({ id: input.orderId }));
 * const orders = defineDeployedFlow(ordersV2, { alias: "orders" });
 * const viaAlias = await startFlow(sql, orders, { orderId: 7 }); // where "orders" points
 * const thisVersion = await startFlow(sql, ordersV2, { orderId: 8 }); // always orders_v2
 * await sql.begin(async (tx) => {
 *   await tx`insert into app.orders (id) values (9)`;
 *   await startFlow(tx, orders, { orderId: 9 }); // commits or rolls back with the insert
 * });
 * ```
 */
export function startFlow<F extends DeployableFlow>(
  sql: Queryable,
  flow: F,
  input: FlowInput<F>,
  options?: StartFlowOptions,
): Promise<string>;
/**
 * Starts a run of the flow an alias or concrete slug names, with any JSON input: the name is
 * resolved as an alias first (when the run starts), then as a concrete slug.
 *
 * @param sql The database client, or a transaction.
 * @param flowRef An alias or a concrete flow slug.
 * @param input The run input. A string holding the JSON text of an object or an array (a
 * request body passed on unparsed) is parsed: the run starts with that object or array.
 * @param options The run id to use and the input size limit.
 * @returns The run id.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const runId = await startFlow(sql, "orders", { orderId: 7 });
 * ```
 */
export function startFlow(
  sql: Queryable,
  flowRef: string,
  input: Json,
  options?: StartFlowOptions,
): Promise<string>;
export async function startFlow(
  sql: Queryable,
  flow: DeployableFlow | string,
  input: unknown,
  options: StartFlowOptions = {},
): Promise<string> {
  const { ref: flowRef, concrete } = startRefOf(flow);
  const action = `Cannot start flow ${JSON.stringify(flowRef)}`;
  if (options.runId !== undefined) assertUuid(options.runId, action);
  // A concrete flow's own limit is the one the database applies; an alias may name another
  // version, so a start through it checks the default only.
  const flowLimit = concrete ? routingOf(flow).flow.options.maxInputBytes : undefined;
  const maxBytes = options.maxInputBytes === undefined
    ? flowLimit ?? DEFAULT_MAX_JSON_BYTES
    : assertMaxBytes(options.maxInputBytes, `${action}: maxInputBytes`);
  const startOptions = startOptionsJson(options, action);
  // A flow object's input schema checks the input before anything is written; a name has none.
  const value = await startInput(flow, input, action);
  const inputJson = toJsonText(value, { action, root: "input", maxBytes });
  try {
    return await startFlowRun(sql, {
      flowRef,
      concrete,
      inputJson,
      runId: options.runId,
      // The run joins the caller's trace: each attempt's span is a child of the active span.
      traceparent: traceparentOf(context.active()),
      options: startOptions,
    });
  } catch (error) {
    // no_data_found is what start_flow and start_flow_version raise for an unknown name.
    const code = (error as { code?: unknown }).code;
    const refused = flowAccessErrorOf(error);
    if (refused !== undefined) throw refused;
    if (code === "P0002") throw new FlowNotFoundError(flowRef, !concrete, { cause: error });
    throw idempotencyConflictOf(error as { code?: unknown }, flowRef, error) ??
      limitError(notInstalledError(error, action));
  }
}

/** The typed error for SQLSTATE `SLL01` (a size limit), else `error` itself. */
export function limitError(error: unknown): unknown {
  const { code, detail, message } = error as {
    code?: unknown;
    detail?: unknown;
    message?: unknown;
  };
  if (code !== "SLL01" || typeof detail !== "string" || typeof message !== "string") return error;
  const fields = JSON.parse(detail) as { limit: string; size: number; max: number };
  return new LimitExceededError(message, fields);
}
