// What the `fence` commands share: their options, the affected set, the drain view.

import { DEFAULT_STATE_FILE, readFenceState } from "./fence_state.ts";
import { type CommandArgs, type OptionSpec, optionString } from "./command_types.ts";

/** Where `deno task gen:functions` writes the manifest in this layout. */
export const DEFAULT_MANIFEST = "supabase/functions/sluice.manifest.json";

/** `--manifest FILE`: the new deploy's manifest. */
export const MANIFEST_OPTION: OptionSpec = {
  name: "manifest",
  value: "FILE",
  summary: `the new deploy's manifest (default ${DEFAULT_MANIFEST})`,
};

/** `--state FILE`: the fence's state file. */
export const STATE_OPTION: OptionSpec = {
  name: "state",
  value: "FILE",
  summary: `the fence state file fence record writes (default ${DEFAULT_STATE_FILE})`,
};

/** `--functions A,B`: worker function names. */
export const FUNCTIONS_OPTION: OptionSpec = {
  name: "functions",
  value: "NAME,...",
  summary: "comma-separated worker function names",
};

/** The names of `--functions`, or `undefined` when not given; rejects an empty name. */
export function functionsOption(args: CommandArgs): string[] | undefined {
  const value = optionString(args, "functions");
  if (value === undefined) return undefined;
  const names = value.split(",").map((name) => name.trim());
  if (names.some((name) => name === "")) {
    throw new RangeError(`--functions needs comma-separated names, got ${JSON.stringify(value)}`);
  }
  return [...new Set(names)].sort();
}

/** The functions a fence command acts on: `--functions` if given, else the state file's set. */
export async function fencedNames(args: CommandArgs): Promise<string[]> {
  const names = functionsOption(args);
  if (names !== undefined) return names;
  const state = await readFenceState(optionString(args, "state", DEFAULT_STATE_FILE));
  return state.functions.map((entry) => entry.function_name);
}
