/**
 * `grantAccess`: gives a database role a producer's and a worker's privileges on sluice, on every
 * flow or on a set of flows (docs/privileges.md#per-flow-access).
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { grantAccessRow } from "../db/ops_queries.ts";
import { MAX_SLUG_LENGTH, slugProblem } from "../dsl/slug.ts";

/** Options of {@linkcode grantAccess}. */
export interface GrantAccessOptions {
  /**
   * The flows the role may reach: each a flow slug (which also covers the flows the alias of that
   * name has pointed at) or a slug prefix ending in `*` (`"billing_*"`: every flow and alias whose
   * name starts with `billing_`, later versions included). Omitted: every flow, as in 0.1.0.
   */
  flows?: readonly string[];
}

/** Thrown before anything is sent when a flow entry of {@linkcode grantAccess} is no slug or prefix. */
export class GrantAccessError extends Error {
  override readonly name = "GrantAccessError";
  /** The role the grant was for. */
  readonly role: string;
  /** The offending entry of `flows` (`undefined` when the list is empty). */
  readonly entry: string | undefined;

  /**
   * @param role The role the grant was for.
   * @param entry The offending entry, or `undefined` for an empty list.
   * @param problem What is wrong with it.
   */
  constructor(role: string, entry: string | undefined, problem: string) {
    super(`Cannot grant sluice access to role "${role}": ${problem}`);
    this.role = role;
    this.entry = entry;
  }
}

/**
 * Grants `role` a producer's and a worker's privileges on sluice (`sluice.grant_access`): on every
 * flow, or only on `options.flows`. Run it as the role that owns sluice's objects (the one that
 * ran the migrations). A scoped role sees and changes only its flows' runs, tasks, signals,
 * schedules, workers and queues; the functions it calls on another flow's things fail with
 * SQLSTATE `SLA01`, naming the role and the flow. Calling it again replaces the role's scope.
 *
 * @example Two teams in one database
 * ```ts ignore
 * import { connect } from "@sluice/sluice";
 * import { grantAccess } from "@sluice/sluice/admin";
 * const sql = connect(Deno.env.get("DATABASE_URL")!);
 * await grantAccess(sql, "team_billing", { flows: ["billing_*"] });
 * await grantAccess(sql, "team_shipping", { flows: ["shipping_*", "label_printer"] });
 * ```
 *
 * @param sql A client connected as the owner of sluice's objects.
 * @param role The database role to grant.
 * @param options The flows it may reach (omitted: every flow).
 * @throws {GrantAccessError} When `flows` is empty or an entry is neither a slug nor a prefix.
 */
export async function grantAccess(
  sql: Sql,
  role: string,
  options: GrantAccessOptions = {},
): Promise<void> {
  const flows = options.flows;
  if (flows !== undefined) {
    if (flows.length === 0) {
      throw new GrantAccessError(
        role,
        undefined,
        "the list of flows is empty (omit it for every flow)",
      );
    }
    for (const entry of flows) {
      const problem = entryProblem(entry);
      if (problem !== undefined) {
        throw new GrantAccessError(
          role,
          String(entry),
          `${
            JSON.stringify(entry)
          } is neither a flow slug nor a slug prefix ending in *: ${problem}`,
        );
      }
    }
  }
  await grantAccessRow(sql, role, flows ?? null);
}

/** What is wrong with one entry of `flows`, the same rules as `sluice.grant_access`. */
function entryProblem(entry: string): string | undefined {
  if (typeof entry !== "string") return `an entry must be a string, got ${typeof entry}`;
  if (!entry.endsWith("*")) return slugProblem(entry);
  return /^[A-Za-z][A-Za-z0-9_]*\*$/.test(entry) && entry.length <= MAX_SLUG_LENGTH + 1
    ? undefined
    : `a prefix is up to ${MAX_SLUG_LENGTH} letters, digits and underscores, starting with a letter, then *`;
}
