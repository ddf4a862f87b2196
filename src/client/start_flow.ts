/**
 * `startFlow()`: the producer's entry point (`sluice.start_flow`).
 *
 * @module
 */

import type { Sql } from "../db/postgres.ts";
import { startFlowRun } from "../db/client_queries.ts";
import type { Json } from "../dsl/json.ts";
import { assertMaxBytes, DEFAULT_MAX_JSON_BYTES, toJsonText } from "../dsl/json_text.ts";
import { routingOf } from "../dsl/routing.ts";
import type { DeployableFlow, FlowInput } from "../dsl/types.ts";
import { assertUuid } from "../dsl/uuid.ts";

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
export interface StartFlowOptions {
  /**
   * The run id to use (a UUID), e.g. to make starting idempotent on the caller's side: starting
   * a run id that exists fails.
   *
   * @default {a random UUID chosen by the database}
   */
  readonly runId?: string;
  /**
   * The largest input accepted, in bytes of its JSON text (UTF-8). A larger input is refused with
   * a `JsonSizeError` before anything is written.
   *
   * @default {16777216 (16 MiB)}
   */
  readonly maxInputBytes?: number;
}

/**
 * Starts a run of a flow and returns its id. The run's first tasks are queued in the same
 * transaction. Given a flow, the input is typed as that flow's input; given a name (an alias or
 * a concrete slug), any JSON value is accepted.
 *
 * @param sql The database client.
 * @param flow The flow (its concrete slug is used), or an alias or concrete slug.
 * @param input The run input.
 * @param options The run id to use and the input size limit.
 * @returns The run id.
 * @throws {TypeError} When `runId` is not a UUID.
 * @throws {JsonValueError} When the input is not JSON (`NaN`, a function, a `Date`, `undefined`,
 * ...) or holds a string Postgres cannot store (`\u0000`); the error names the path, e.g.
 * `input.total: NaN is not JSON`. Nothing is written.
 * @throws {JsonSizeError} When the input's JSON text is larger than `maxInputBytes`.
 * @throws {RangeError} When `maxInputBytes` is not a positive integer.
 * @throws {Error} From the database when no flow or alias has that name (the flow exists once a
 * worker for it has compiled it), the input is `null`, or a root map step gets an input that is
 * not an array.
 *
 * @example Usage
 * ```ts ignore
 * import { connect, Flow, startFlow } from "@sluice/sluice";
 *
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * const flow = new Flow<{ orderId: number }>({ slug: "orders" })
 *   .step({ slug: "load" }, (input) => ({ id: input.orderId }));
 * const runId = await startFlow(sql, flow, { orderId: 7 });
 * const sameFlowByName = await startFlow(sql, "orders", { orderId: 8 });
 * ```
 */
export function startFlow<F extends DeployableFlow>(
  sql: Sql,
  flow: F,
  input: FlowInput<F>,
  options?: StartFlowOptions,
): Promise<string>;
/**
 * Starts a run of the flow an alias or concrete slug names, with any JSON input.
 *
 * @param sql The database client.
 * @param flowRef An alias or a concrete flow slug.
 * @param input The run input.
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
  sql: Sql,
  flowRef: string,
  input: Json,
  options?: StartFlowOptions,
): Promise<string>;
export async function startFlow(
  sql: Sql,
  flow: DeployableFlow | string,
  input: unknown,
  options: StartFlowOptions = {},
): Promise<string> {
  const flowRef = typeof flow === "string" ? flow : routingOf(flow).flow.slug;
  const action = `Cannot start flow ${JSON.stringify(flowRef)}`;
  if (options.runId !== undefined) assertUuid(options.runId, action);
  const maxBytes = options.maxInputBytes === undefined
    ? DEFAULT_MAX_JSON_BYTES
    : assertMaxBytes(options.maxInputBytes, `${action}: maxInputBytes`);
  const inputJson = toJsonText(input, { action, root: "input", maxBytes });
  return await startFlowRun(sql, { flowRef, inputJson, runId: options.runId });
}
