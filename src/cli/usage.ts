// Help text generated from the command registry: the command list of `sluice --help` and the
// usage of `sluice <command> --help`.

import type { CommandSpec, OptionSpec } from "./commands/command_types.ts";
import type { CommandSection } from "./command.ts";

/** How usage lines name the program. */
export const PROGRAM = "sluice";

/** `sluice <name> <positional>... [--option VALUE]... [--json]`. */
export function usageLine(command: CommandSpec): string {
  const positional = command.positional.map((name, i) =>
    command.variadic && i === command.positional.length - 1 ? ` <${name}>...` : ` <${name}>`
  ).join("");
  const options = (command.options ?? []).map((option) => ` [${optionLabel(option)}]`).join("");
  return `${PROGRAM} ${command.name}${positional}${options}${command.json ? " [--json]" : ""}`;
}

function optionLabel(option: OptionSpec): string {
  return `--${option.name}${option.value === undefined ? "" : ` ${option.value}`}`;
}

/** What `sluice <command> --help` prints: usage, description, options. */
export function commandHelp(command: CommandSpec): string {
  const options = command.options ?? [];
  const width = Math.max(0, ...options.map((option) => optionLabel(option).length));
  return [
    `Usage: ${usageLine(command)}`,
    "",
    command.description,
    ...(options.length === 0 ? [] : [
      "",
      "Options:",
      ...options.map((option) => `  ${optionLabel(option).padEnd(width)}  ${option.summary}`),
    ]),
  ].join("\n");
}

/**
 * What `sluice --help` prints: every command of `sections` under its heading; `program` is how
 * the commands are typed (`sluice`, or `sluice ops` for the database commands).
 */
export function help(sections: readonly CommandSection[], program: string = PROGRAM): string {
  const width = Math.max(
    ...sections.flatMap((section) => section.commands.map((command) => command.name.length)),
  );
  return [
    `Usage: ${program} <command> [arguments] [options]`,
    "",
    `${PROGRAM} is \`deno run -A jsr:@sluice/sluice/cli\` (\`deno task sluice\` after install).`,
    ...sections.flatMap((section) => [
      "",
      `${section.title}:`,
      ...section.commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    ]),
    "",
    `\`${PROGRAM} <command> --help\` describes one command; \`${PROGRAM} ops <command>\` runs an`,
    "operations or development command the same way. Exit codes: 0 done, 1 failed (one line",
    "saying why; SLUICE_DEBUG=1 adds the stack trace), 2 bad usage or DATABASE_URL unset.",
  ].join("\n");
}
