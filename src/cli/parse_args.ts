// Reading the command line against the registry: which command the arguments name, its
// arguments, and the closest name to one that names none.

import type { CommandArgs, CommandSpec } from "./commands/command_types.ts";
import { editDistance } from "./commands/flow_names.ts";

const words = (command: CommandSpec) => command.name.split(" ");

/** The command with the longest (one- or two-word) name the arguments start with. */
export function findCommand<Command extends CommandSpec>(
  commands: readonly Command[],
  args: readonly string[],
): Command | undefined {
  return commands
    .filter((command) => words(command).every((word, i) => args[i] === word))
    .sort((a, b) => words(b).length - words(a).length)[0];
}

/** Splits a command's arguments; returns an error message for anything it does not accept. */
export function parseArgs(command: CommandSpec, args: readonly string[]): CommandArgs | string {
  const positional: string[] = [];
  const options: Record<string, string | true> = {};
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    // "-1 day" is an (invalid, negative) interval for the database to reject, not an option.
    if (arg === "--json" && command.json) {
      json = true;
      continue;
    }
    if (!/^--?[a-zA-Z]/.test(arg)) {
      positional.push(arg);
      continue;
    }
    const [name, inline] = arg.replace(/^--?/, "").split(/=(.*)/s, 2);
    const spec = command.options?.find((option) => option.name === name);
    if (spec === undefined || !arg.startsWith("--")) {
      return `unknown option ${JSON.stringify(arg)}`;
    }
    if (spec.value === undefined) {
      if (inline !== undefined) return `option --${name} takes no value`;
      options[name] = true;
    } else if (inline !== undefined) {
      options[name] = inline;
    } else if (i + 1 < args.length) {
      options[name] = args[++i];
    } else {
      return `option --${name} needs a value (${spec.value})`;
    }
  }
  const count = command.positional.length;
  if (command.variadic ? positional.length < count : positional.length !== count) {
    const wanted = command.positional.length === 0
      ? "no arguments"
      : command.positional.map((name) => `<${name}>`).join(" ");
    return `expected ${wanted}, got ${
      positional.length === 0 ? "none" : positional.map((arg) => JSON.stringify(arg)).join(" ")
    }`;
  }
  return { positional, json, options };
}

/**
 * The command whose name is closest to the words the arguments start with (as many words as the
 * name has), when a typo away: at most one edit in four characters, and at least one edit allowed.
 */
export function closestCommand<Command extends CommandSpec>(
  commands: readonly Command[],
  args: readonly string[],
): Command | undefined {
  let best: { command: Command; edits: number } | undefined;
  for (const command of commands) {
    const typed = args.slice(0, words(command).length).join(" ");
    const edits = editDistance(typed, command.name);
    if (edits > Math.max(1, Math.floor(command.name.length / 4))) continue;
    if (best === undefined || edits < best.edits) best = { command, edits };
  }
  return best?.command;
}
