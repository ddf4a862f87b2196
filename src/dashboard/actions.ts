/**
 * The operator actions the dashboard offers, the same the CLI has: lift a worker function's
 * restart pause (`ops clear-pause`), enable or disable it (`ops functions enable|disable`).
 *
 * @module
 */

import type { Sql } from "../db/driver/postgres.ts";
import { clearRestartPause, setWorkerFunctionsEnabled } from "../db/ops_queries.ts";

/** The name of an action in its URL, `/actions/<name>`. */
export type ActionName = "clear-pause" | "enable" | "disable";

/** One action on a worker function. */
export interface Action {
  /** The question the confirmation page asks. */
  question(functionName: string): string;
  /** Carries it out; returns what happened, in a sentence. */
  run(sql: Sql, functionName: string): Promise<string>;
}

function switchAction(enabled: boolean): Action {
  const verb = enabled ? "enable" : "disable";
  return {
    question: (name) =>
      `${enabled ? "Enable" : "Disable"} worker function ${JSON.stringify(name)}? ` +
      (enabled
        ? "Its Edge function starts a worker at its next invocation."
        : "No new worker starts and none respawns; running workers go on."),
    async run(sql, name) {
      const [change] = await setWorkerFunctionsEnabled(sql, { [name]: enabled });
      return change.previous_enabled === enabled
        ? `Worker function ${JSON.stringify(name)} was already ${verb}d; nothing changed.`
        : `Worker function ${JSON.stringify(name)} is now ${verb}d.`;
    },
  };
}

/**
 * Every action by name.
 *
 * @example Usage
 * ```ts ignore
 * import { ACTIONS } from "./actions.ts";
 *
 * console.log(await ACTIONS["clear-pause"].run(sql, "thread-digest--classify"));
 * ```
 */
export const ACTIONS: Readonly<Record<ActionName, Action>> = {
  "clear-pause": {
    question: (name) =>
      `Clear the restart pause of worker function ${JSON.stringify(name)}? ` +
      "Fix the cause first (deploy the right worker or remove the stray messages): " +
      "its next invocation starts a worker.",
    async run(sql, name) {
      return await clearRestartPause(sql, name)
        ? `Cleared the restart pause of worker function ${JSON.stringify(name)}.`
        : `Worker function ${JSON.stringify(name)} was not restart-paused; nothing changed.`;
    },
  },
  enable: switchAction(true),
  disable: switchAction(false),
};

/**
 * Whether `name` is an action of {@linkcode ACTIONS}.
 *
 * @example Usage
 * ```ts
 * import { isActionName } from "./actions.ts";
 *
 * isActionName("enable"); // true
 * ```
 */
export function isActionName(name: string): name is ActionName {
  return Object.hasOwn(ACTIONS, name);
}
