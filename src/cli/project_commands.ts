// The registry's entries for the commands that set a project up and run it locally: `install`,
// `migrate`, `functions generate` and `dev`. Their bodies live beside this file.

import { optionString } from "./commands/command_types.ts";
import type { LocalCommand } from "./command.ts";
import { devCommand } from "./dev.ts";
import { functionsGenerate } from "./functions_generate.ts";
import { install } from "./install.ts";
import { migrateCommand } from "./migrate.ts";

function stopSignal(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  for (const name of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(name, stop);
  return controller.signal;
}

/** `sluice install`. */
export const installCliCommand: LocalCommand = {
  local: true,
  name: "install",
  positional: [],
  json: false,
  summary: "set sluice up in the Supabase project in this directory",
  description:
    "Copies sluice's migrations into supabase/migrations/ (the ones not copied before), makes\n" +
    "supabase/config.toml serve functions with the per_worker policy, and maps @sluice/sluice\n" +
    "and the `sluice` task in deno.json. Checks everything before writing anything, prints\n" +
    "every change; a second run changes nothing.",
  async run(_args, { cwd, io }) {
    await install(cwd, io);
    return 0;
  },
};

/** `sluice migrate`. */
export const migrateCliCommand: LocalCommand = {
  local: true,
  name: "migrate",
  positional: [],
  json: false,
  summary: "apply sluice's migrations to DATABASE_URL",
  description: "Installs PGMQ when the server lacks it (the extension, else sluice's compatible\n" +
    "layer) and applies sluice's migrations; copies `sluice install` made are recorded in\n" +
    "Supabase's ledger too, so `supabase migration up` skips them.",
  run: (_args, { databaseUrl, cwd, io }) => migrateCommand(databaseUrl, cwd, io),
};

/** `sluice functions generate`. */
export const functionsGenerateCliCommand: LocalCommand = {
  local: true,
  name: "functions generate",
  positional: [],
  options: [
    {
      name: "check",
      summary: "write nothing; exit 1 when a generated file is missing, stale or extra",
    },
    { name: "config", value: "FILE", summary: "the deno.json to read (default ./deno.json)" },
  ],
  json: false,
  summary: "write one Edge Function per worker function of the flows module",
  description: "Writes supabase/functions/<name>/{index.ts,deno.json} for every worker function\n" +
    'of the flows module ("sluice.flows" in deno.json, default\n' +
    "./supabase/functions/_shared/flows.ts), plus sluice.manifest.json and sluice.config.toml\n" +
    "(and the generated block of supabase/config.toml when that file exists). Refuses a flows\n" +
    "module or local import outside the directory holding supabase/.",
  run: (args, { io }) =>
    functionsGenerate({
      check: args.options.check === true,
      configPath: optionString(args, "config"),
    }, io),
};

/** `sluice dev`. */
export const devCliCommand: LocalCommand = {
  local: true,
  name: "dev",
  positional: [],
  options: [{
    name: "config",
    value: "FILE",
    summary: "the deno.json naming the flows module (default ./deno.json)",
  }],
  json: false,
  summary: "run every worker function here against DATABASE_URL (else an embedded database)",
  description:
    "Runs every worker function of the flows module in this one process, in development mode\n" +
    "(a changed flow shape recompiles once the old workers have drained, deleting the flow's\n" +
    "finished runs; while runs of it are in flight it refuses, naming them), printing each\n" +
    "function's log lines prefixed with its name. Ctrl-C stops every worker gracefully.\n" +
    "Without DATABASE_URL (or with SLUICE_EMBEDDED=1) the workers run on an embedded PGlite\n" +
    "database in this process, migrated, kept in SLUICE_EMBEDDED_DIR when that is set.",
  run: (args, { databaseUrl, signal, io }) =>
    devCommand({
      databaseUrl,
      configPath: optionString(args, "config", "./deno.json"),
      signal: signal ?? stopSignal(),
      io,
    }),
};
