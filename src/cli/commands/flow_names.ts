/**
 * The closest name to a mistyped one, for the commands' "did you mean" hints: command names
 * (src/cli/parse_args.ts) and the flow slugs of `--flow` (`runs`, `schedules create`).
 *
 * @module
 */

import { listFlowNames } from "../../db/ops_queries.ts";
import type { Sql } from "../../db/driver/postgres.ts";

/**
 * Levenshtein distance: insertions, deletions and substitutions from `a` to `b`.
 *
 * @param a One string.
 * @param b The other.
 * @returns The number of edits.
 */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j] + 1,
        current[j - 1] + 1,
        previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length];
}

/**
 * The name closest to `typed` when a typo away: at most one edit in four characters of the name,
 * and at least one edit allowed; compared case-insensitively, as slugs are.
 *
 * @param typed What was given.
 * @param names The names it may have meant.
 * @returns The closest, or undefined when none is that close.
 */
export function closestName(typed: string, names: readonly string[]): string | undefined {
  let best: { name: string; edits: number } | undefined;
  for (const name of names) {
    const edits = editDistance(typed.toLowerCase(), name.toLowerCase());
    if (edits > Math.max(1, Math.floor(name.length / 4))) continue;
    if (best === undefined || edits < best.edits) best = { name, edits };
  }
  return best?.name;
}

/**
 * Why `typed` names no compiled flow, with the flow it probably meant, or null when it names one
 * (spelled in any case). Read from `sluice.flows` (and `sluice.aliases` with `aliases`).
 *
 * @param sql The database client.
 * @param typed The flow slug given.
 * @param options `aliases`: an alias name is also a valid answer.
 * @returns `no flow "ordrs"; did you mean "orders"?` (or the known flows), or null.
 */
export async function unknownFlowHint(
  sql: Sql,
  typed: string,
  options: { aliases?: boolean } = {},
): Promise<string | null> {
  const names = await listFlowNames(sql, options.aliases === true);
  if (names.some((name) => name.toLowerCase() === typed.toLowerCase())) return null;
  const kind = options.aliases === true ? "flow or alias" : "flow";
  const closest = closestName(typed, names);
  const hint = closest !== undefined
    ? `did you mean ${JSON.stringify(closest)}?`
    : names.length === 0
    ? "no flow is compiled yet (a flow exists once a worker for it has started)"
    : `the ${kind}s are ${names.slice(0, 10).map((name) => JSON.stringify(name)).join(", ")}${
      names.length > 10 ? ` and ${names.length - 10} more` : ""
    }`;
  return `no ${kind} ${JSON.stringify(typed)}; ${hint}`;
}
