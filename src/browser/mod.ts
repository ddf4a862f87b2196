/**
 * The browser and Edge client, on supabase-js: start a run through an RPC that only an explicitly
 * granted role may call, and follow it over Supabase Realtime with the same typed events as
 * `watchRun()` (docs/events.md).
 *
 * @example Usage
 * ```ts ignore
 * import { createClient } from "npm:@supabase/supabase-js@2";
 * import { startRun, subscribeToRun } from "@sluice/sluice/browser";
 *
 * const supabase = createClient("https://project.supabase.co", "anon-key");
 * const runId = await startRun(supabase, "report", { month: "2026-11" });
 * for await (const event of subscribeToRun(supabase, runId)) console.log(event);
 * ```
 *
 * @module
 */

export * from "./start_run.ts";
export {
  type DebounceOptions,
  type FlowControlStartOptions,
  IdempotencyConflictError,
  MAX_DEBOUNCE_SECONDS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_PRIORITY,
  StartOptionError,
} from "../dsl/start_options.ts";
export * from "./subscribe_to_run.ts";
export type { RpcName } from "./_rpc.ts";
export * from "../events/run_event.ts";
