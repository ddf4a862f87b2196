/**
 * The error `sluice functions generate` throws for a configuration or flows module it cannot turn
 * into worker functions.
 *
 * @module
 */

/**
 * Why code generation was refused:
 *
 * - `invalid_config`: the `sluice` key of `deno.json` is missing or malformed.
 * - `no_flows`: the flows module exports no `Flow` or step-queued flow.
 * - `empty_flow`: an exported flow has no steps, so no worker could run it.
 * - `duplicate_flow`: two exports carry the same concrete flow slug (compared case-insensitively);
 *   their worker functions would collide, and one concrete flow has exactly one queue mode.
 * - `config_toml_conflict`: `supabase/config.toml` has a broken generated block, or a
 *   hand-written `[functions.<name>]` table for a generated function.
 * - `invalid_name`: a flow or step slug, function name or queue name of an exported flow breaks
 *   the naming rules (a flow object forged past the builders' checks); it would become a path.
 * - `outside_deploy_root`: a generated function would import a local file outside the directory
 *   that holds `supabase/`, which `supabase functions deploy` does not upload.
 * - `no_flows_module`: the flows module does not exist.
 * - `flows_module_failed`: importing the flows module threw (a flow definition error such as a
 *   duplicate step slug, a syntax error, a missing import); `cause` holds the error.
 *
 * @example Usage
 * ```ts
 * import type { CodegenErrorReason } from "./errors.ts";
 *
 * const reason: CodegenErrorReason = "duplicate_flow";
 * ```
 */
export type CodegenErrorReason =
  | "invalid_config"
  | "no_flows"
  | "empty_flow"
  | "duplicate_flow"
  | "config_toml_conflict"
  | "invalid_name"
  | "outside_deploy_root"
  | "no_flows_module"
  | "flows_module_failed";

/**
 * The fields of a {@linkcode CodegenError}.
 *
 * @example Usage
 * ```ts
 * import type { CodegenErrorDetails } from "./errors.ts";
 *
 * const details: CodegenErrorDetails = {
 *   reason: "duplicate_flow",
 *   path: "/app/flows.ts",
 *   flowSlug: "orders",
 *   exportNames: ["orders", "ordersV2"],
 * };
 * ```
 */
export interface CodegenErrorDetails {
  /** Why generation was refused. */
  readonly reason: CodegenErrorReason;
  /** The file at fault: `deno.json`, the flows module or `config.toml`. */
  readonly path: string;
  /** The flow involved, when there is one. */
  readonly flowSlug?: string;
  /** The exports of the flows module involved, in code-point order. */
  readonly exportNames?: readonly string[];
  /** The underlying error, when there is one. */
  readonly cause?: unknown;
}

/**
 * Thrown by `generateFunctions()` before it writes anything.
 *
 * @example Usage
 * ```ts ignore
 * import { CodegenError, generateFunctions } from "./mod.ts";
 *
 * try {
 *   await generateFunctions({ check: true });
 * } catch (error) {
 *   if (error instanceof CodegenError) console.error(error.reason, error.path);
 * }
 * ```
 */
export class CodegenError extends Error implements CodegenErrorDetails {
  override name = "CodegenError";
  readonly reason: CodegenErrorReason;
  readonly path: string;
  readonly flowSlug: string | undefined;
  readonly exportNames: readonly string[];

  /**
   * @param message The error message.
   * @param details The reason and the file, flow and exports involved.
   */
  constructor(message: string, details: CodegenErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.reason = details.reason;
    this.path = details.path;
    this.flowSlug = details.flowSlug;
    this.exportNames = details.exportNames ?? [];
  }
}
