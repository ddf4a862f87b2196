// The RPCs the browser client calls, and how a flow names itself to them.

import type { SupabaseClient } from "@supabase/supabase-js";
import { startRefOf } from "../dsl/routing.ts";
import type { DeployableFlow } from "../dsl/types.ts";

/**
 * A database function exposed through the Supabase API: its schema (which must be among the
 * project's exposed schemas) and name.
 */
export interface RpcName {
  /** The function's schema. @default {"sluice"} */
  readonly schema?: string;
  /** The function's name. */
  readonly name: string;
}

/** Calls the function `rpc` names (sluice's `fallback` by default) with named arguments. */
export function rpcOf(
  supabase: SupabaseClient,
  rpc: RpcName | undefined,
  fallback: string,
): (args: Record<string, unknown>) => PromiseLike<{ data: unknown; error: Error | null }> {
  const schema = rpc?.schema ?? "sluice";
  const name = rpc?.name ?? fallback;
  return (args) => supabase.schema(schema).rpc(name, args);
}

/**
 * The name a run is started by: a deployed flow's alias, a concrete flow's slug, or the given
 * alias or slug. The RPC resolves every name alias-first (`sluice.start_run`), including a
 * concrete flow's slug.
 */
export function flowRefOf(flow: DeployableFlow | string): string {
  return startRefOf(flow).ref;
}
