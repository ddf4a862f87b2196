/**
 * Runs one operator command of `sluice <command>` (src/cli/registry.ts lists them): connects to
 * the database at `DATABASE_URL`, checks that sluice is installed there, runs the command on the
 * connection and closes it.
 *
 * ```sh
 * DATABASE_URL=postgres://... deno task sluice coverage
 * ```
 *
 * @module
 */

import { connect } from "../../db/connect.ts";
import { isSluiceInstalled } from "../../db/ops_queries.ts";
import { type CliIo, type CommandArgs, type OpsCommand, optionString } from "./command_types.ts";

/** Options of {@linkcode runOpsCommand}. */
export interface OpsRunOptions {
  /** The database when the command's `--database-url` does not name one (`DATABASE_URL`). */
  readonly databaseUrl: string | undefined;
  /** Where to print. */
  readonly io: CliIo;
}

/**
 * Runs an ops command with its parsed arguments on a connection of its own.
 *
 * @param command The command.
 * @param parsed Its arguments.
 * @param options The database URL and output streams.
 * @returns The exit code: 0 done, 1 failed, 2 no database URL.
 *
 * @example Usage
 * ```ts ignore
 * import { runOpsCommand } from "./run_ops_command.ts";
 * import { coverageCommand } from "./coverage.ts";
 *
 * const args = { positional: [], json: true, options: {} };
 * Deno.exit(await runOpsCommand(coverageCommand, args, { databaseUrl: url, io }));
 * ```
 */
export async function runOpsCommand(
  command: OpsCommand,
  parsed: CommandArgs,
  options: OpsRunOptions,
): Promise<number> {
  const { io } = options;
  // A command may take the database as an option (`dashboard --database-url`).
  const url = optionString(parsed, "database-url") ?? options.databaseUrl;
  if (url === undefined || url === "") {
    io.err(
      `Cannot run ops ${command.name}: DATABASE_URL is not set; set it to the sluice database, ` +
        "e.g. DATABASE_URL=postgres://postgres:postgres@127.0.0.1:54322/postgres",
    );
    return 2;
  }
  let sql: ReturnType<typeof connect> | undefined;
  try {
    sql = connect(url, { max: command.connections ?? 1, applicationName: "sluice-ops" });
    if (!(await isSluiceInstalled(sql))) {
      io.err(
        `Cannot run ops ${command.name}: sluice is not installed in this database (schema ` +
          "sluice missing); apply its migrations with `deno task sluice migrate` (or " +
          "`supabase migration up` after `deno task sluice install`)",
      );
      return 1;
    }
    return await command.run(sql, parsed, io);
  } catch (error) {
    // An unreachable server or a rejected argument deserves one clear line, not a stack trace.
    io.err(`Cannot run ops ${command.name}: ${error instanceof Error ? error.message : error}`);
    return 1;
  } finally {
    // Bounded: every statement has settled here, and postgres.js 3.4.9's end() has been seen to
    // wait forever on a connection the server showed idle; after 5 s it destroys the connection.
    await sql?.end({ timeout: 5 });
  }
}
