/**
 * `deno task ops functions enable|disable|deprecate <function_name>...`: one-off switches on named
 * worker functions, outside a fenced rollout.
 *
 * @module
 */

import type { OpsCommand } from "./command_types.ts";
import { deprecateFunctionWorkers } from "../../db/fence_queries.ts";
import { setWorkerFunctionsEnabled, unknownWorkerFunctions } from "../../db/ops_queries.ts";
import { printEnabledChanges } from "./_enabled.ts";

/** Says which names are unknown; a typo must not create a worker function row. */
function rejectUnknown(verb: string, unknown: readonly string[], err: (line: string) => void) {
  err(
    `Cannot ${verb} ${
      unknown.map((name) => JSON.stringify(name)).join(", ")
    }: no worker function has that name (see deno task sluice functions); nothing changed`,
  );
  return 1;
}

function switchCommand(enabled: boolean): OpsCommand {
  const verb = enabled ? "enable" : "disable";
  return {
    name: `functions ${verb}`,
    positional: ["function_name"],
    variadic: true,
    json: true,
    summary: enabled
      ? "enable worker functions (they start and respawn workers again)"
      : "disable worker functions (no new worker, no respawn; running workers go on)",
    description: `Sets enabled = ${enabled} for the named worker functions in one transaction.\n` +
      (enabled
        ? "The next invocation of an Edge function starts its worker."
        : "Running workers are not stopped: deprecate them (functions deprecate) for that."),
    async run(sql, args, io) {
      const unknown = await unknownWorkerFunctions(sql, args.positional);
      if (unknown.length > 0) return rejectUnknown(verb, unknown, io.err);
      const settings = Object.fromEntries(args.positional.map((name) => [name, enabled]));
      printEnabledChanges(io, args.json, await setWorkerFunctionsEnabled(sql, settings));
      return 0;
    },
  };
}

/**
 * `functions enable <function_name>...`.
 *
 * @example Usage
 * ```ts ignore
 * import { functionsEnableCommand } from "./function_switches.ts";
 *
 * await functionsEnableCommand.run(sql, { positional: ["greet-user"], json: false, options: {} }, io);
 * ```
 */
export const functionsEnableCommand: OpsCommand = switchCommand(true);

/**
 * `functions disable <function_name>...`.
 *
 * @example Usage
 * ```ts ignore
 * import { functionsDisableCommand } from "./function_switches.ts";
 *
 * await functionsDisableCommand.run(sql, { positional: ["greet-user"], json: false, options: {} }, io);
 * ```
 */
export const functionsDisableCommand: OpsCommand = switchCommand(false);

/**
 * `functions deprecate <function_name>...`: deprecates the workers of the named functions.
 *
 * @example Usage
 * ```ts ignore
 * import { functionsDeprecateCommand } from "./function_switches.ts";
 *
 * await functionsDeprecateCommand.run(sql, { positional: ["greet-user"], json: false, options: {} }, io);
 * ```
 */
export const functionsDeprecateCommand: OpsCommand = {
  name: "functions deprecate",
  positional: ["function_name"],
  variadic: true,
  json: false,
  summary: "deprecate the running workers of worker functions (they finish and stop)",
  description:
    "Calls sluice.deprecate_function_workers: at its next heartbeat each worker of the named\n" +
    "functions stops polling, finishes the tasks it claimed and stops. An enabled Edge\n" +
    "function starts a new worker at its next invocation; disable it first to stop for good.\n" +
    "`fence drain --functions NAME,...` waits until they are gone.",
  async run(sql, args, io) {
    const unknown = await unknownWorkerFunctions(sql, args.positional);
    if (unknown.length > 0) return rejectUnknown("deprecate the workers of", unknown, io.err);
    const count = await deprecateFunctionWorkers(sql, args.positional);
    io.out(
      `Deprecated ${count} workers of ${args.positional.join(", ")}; each finishes the tasks it ` +
        "claimed and stops.",
    );
    return 0;
  },
};
