/**
 * `startRun()`: starts a run from a browser or an Edge Function through a Supabase RPC.
 *
 * @module
 */

import type { SupabaseClient } from "@supabase/supabase-js";
import type { Json } from "../dsl/json.ts";
import { assertMaxBytes, DEFAULT_MAX_JSON_BYTES, toJsonText } from "../dsl/json_text.ts";
import {
  type FlowControlStartOptions,
  idempotencyConflictOf,
  startOptionsJson,
} from "../dsl/start_options.ts";
import type { DeployableFlow, FlowInput } from "../dsl/types.ts";
import { startInput } from "../dsl/start_input.ts";
import { flowRefOf, type RpcName, rpcOf } from "./_rpc.ts";

/**
 * Options of {@linkcode startRun}.
 *
 * @example Usage
 * ```ts
 * import type { StartRunOptions } from "@sluice/sluice/browser";
 *
 * const options: StartRunOptions = { rpc: { schema: "public", name: "start_report" } };
 * ```
 */
export interface StartRunOptions extends FlowControlStartOptions {
  /**
   * The function to call, taking `(flow_ref text, input jsonb)` and returning the run id:
   * sluice's `sluice.start_run`, or an application's wrapper around it (docs/events.md). With
   * flow-control options (an `idempotencyKey`), it is called with a third argument,
   * `options jsonb` (`sluice.start_run(flow_ref, input, options)`).
   *
   * @default {{ schema: "sluice", name: "start_run" }}
   */
  readonly rpc?: RpcName;
  /**
   * The largest input accepted, in bytes of its JSON text (UTF-8).
   *
   * @default {16777216 (16 MiB)}
   */
  readonly maxInputBytes?: number;
}

/**
 * Starts a run through an RPC and resolves its id; given a flow, the input is typed as that
 * flow's input. The RPC runs as the caller's role (on Supabase, the signed-in user's), which must
 * have been granted EXECUTE on it explicitly: no role is by default.
 *
 * @param supabase A supabase-js client.
 * @param flow The flow: a deployed flow sends its alias, a concrete flow its slug. The RPC
 * resolves either name alias-first (an RPC takes a name; granting it per name is the access
 * control), so once a concrete flow's own name is re-pointed to a newer version, its slug starts
 * that version: pass the `DeployedFlow` whose input type matches the alias.
 * @param input The run input.
 * @param options Which RPC to call, and the input size limit.
 * @returns The run id.
 * @throws {JsonValueError} When the input is not JSON; nothing is sent.
 * @throws {InputValidationError} When the flow has an input schema and the input does not match
 * it; nothing is sent.
 * @throws {StartOptionError} When `idempotencyKey` is not a string of 1 to 255 characters, or
 * `debounce` is malformed, or `priority` is not a whole number from -1000 to 1000; nothing is
 * sent.
 * @throws {IdempotencyConflictError} When `idempotencyKey` already started a run of the same name
 * with another input.
 * @throws {Error} The RPC's error (e.g. permission denied), with supabase-js's as `cause`.
 *
 * @example Usage
 * ```ts ignore
 * import { createClient } from "npm:@supabase/supabase-js@2";
 * import { Flow } from "@sluice/sluice";
 * import { startRun } from "@sluice/sluice/browser";
 *
 * const flow = new Flow<{ month: string }>({ slug: "report" })
 *   .step({ slug: "total" }, (input) => input.month.length);
 * const supabase = createClient("https://project.supabase.co", "anon-key");
 * const runId = await startRun(supabase, flow, { month: "2026-11" });
 * ```
 */
export function startRun<F extends DeployableFlow>(
  supabase: SupabaseClient,
  flow: F,
  input: FlowInput<F>,
  options?: StartRunOptions,
): Promise<string>;
/**
 * Starts a run of the flow an alias or concrete slug names, with any JSON input.
 *
 * @param supabase A supabase-js client.
 * @param flowRef An alias or a concrete flow slug.
 * @param input The run input. A string holding the JSON text of an object or an array is
 * parsed: the run starts with that object or array.
 * @param options Which RPC to call, and the input size limit.
 * @returns The run id.
 *
 * @example Usage
 * ```ts ignore
 * import { createClient } from "npm:@supabase/supabase-js@2";
 * import { startRun } from "@sluice/sluice/browser";
 *
 * const supabase = createClient("https://project.supabase.co", "anon-key");
 * const runId = await startRun(supabase, "report", { month: "2026-11" });
 * ```
 */
export function startRun(
  supabase: SupabaseClient,
  flowRef: string,
  input: Json,
  options?: StartRunOptions,
): Promise<string>;
export async function startRun(
  supabase: SupabaseClient,
  flow: DeployableFlow | string,
  input: unknown,
  options: StartRunOptions = {},
): Promise<string> {
  const flowRef = flowRefOf(flow);
  const action = `Cannot start flow ${JSON.stringify(flowRef)}`;
  const maxBytes = options.maxInputBytes === undefined
    ? DEFAULT_MAX_JSON_BYTES
    : assertMaxBytes(options.maxInputBytes, `${action}: maxInputBytes`);
  // Checked here so that a value JSON cannot carry is refused before anything is sent.
  const value = await startInput(flow, input, action);
  const inputJson = toJsonText(value, { action, root: "input", maxBytes });
  const startOptions = startOptionsJson(options, action);
  const { data, error } = await rpcOf(supabase, options.rpc, "start_run")({
    flow_ref: flowRef,
    input: JSON.parse(inputJson),
    ...(startOptions === undefined ? {} : { options: startOptions }),
  });
  if (error !== null) {
    // The Data API reports the database error's detail as `details`.
    const { code, details } = error as { code?: unknown; details?: unknown };
    throw idempotencyConflictOf({ code, detail: details }, flowRef, error) ??
      new Error(`${action}: ${error.message}`, { cause: error });
  }
  return data as string;
}
