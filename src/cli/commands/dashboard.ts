/**
 * `deno task dashboard [--port P] [--host H --secret-file F] [--database-url URL]`: serves the web
 * dashboard until interrupted.
 *
 * @module
 */

import { DashboardOptionsError, startDashboard } from "../../dashboard/mod.ts";
import { type OpsCommand, optionString } from "./command_types.ts";

/** Where a configured secret may come from instead of the command line (which `ps` shows). */
const SECRET_VARIABLE = "SLUICE_DASHBOARD_SECRET";

/**
 * Resolves on the first SIGINT or SIGTERM; returns the function that stops listening. Until it is
 * called, a repeated signal (a process manager that signals twice) is absorbed rather than killing
 * the process halfway through its close.
 */
function interrupted(): { signalled: Promise<void>; stopListening: () => void } {
  const signals = ["SIGINT", "SIGTERM"] as const;
  let resolve!: () => void;
  const signalled = new Promise<void>((done) => resolve = done);
  const onSignal = () => resolve();
  for (const signal of signals) Deno.addSignalListener(signal, onSignal);
  const stopListening = () => {
    for (const signal of signals) Deno.removeSignalListener(signal, onSignal);
  };
  return { signalled, stopListening };
}

/**
 * The configured secret: `--secret-file`'s first line, `--secret` (with a warning: other local
 * users see a command line in `ps`), or the environment variable; `false` after an error.
 */
async function configuredSecret(
  args: Parameters<OpsCommand["run"]>[1],
  io: Parameters<OpsCommand["run"]>[2],
): Promise<string | undefined | false> {
  const file = optionString(args, "secret-file");
  const inline = optionString(args, "secret");
  if (file !== undefined && inline !== undefined) {
    io.err("Cannot start the dashboard: give --secret-file or --secret, not both");
    return false;
  }
  if (inline !== undefined) {
    io.err(
      `sluice dashboard: warning: --secret shows in \`ps\` to every local user; use ` +
        `--secret-file or ${SECRET_VARIABLE}`,
    );
    return inline;
  }
  if (file === undefined) return Deno.env.get(SECRET_VARIABLE);
  try {
    return (await Deno.readTextFile(file)).split(/\r?\n/)[0];
  } catch (error) {
    io.err(
      `Cannot start the dashboard: cannot read --secret-file ${JSON.stringify(file)}: ` +
        (error as Error).message,
    );
    return false;
  }
}

/**
 * The `dashboard` command. Exits 2 for a bad option (a port out of range, a short secret, a
 * non-loopback `--host` without a secret), 0 after Ctrl-C.
 *
 * @example Usage
 * ```ts ignore
 * import { dashboardCommand } from "./dashboard.ts";
 *
 * await dashboardCommand.run(sql, { positional: [], json: false, options: { port: "4300" } }, io);
 * ```
 */
export const dashboardCommand: OpsCommand = {
  name: "dashboard",
  positional: [],
  options: [
    { name: "port", value: "P", summary: "port to listen on (default 4300; 0 picks a free one)" },
    {
      name: "host",
      value: "H",
      summary: "address to listen on (default 127.0.0.1); any other needs a secret",
    },
    {
      name: "secret-file",
      value: "F",
      summary: `a file holding the token to require (or ${SECRET_VARIABLE}; default: random)`,
    },
    {
      name: "secret",
      value: "S",
      summary: "the token on the command line, where `ps` shows it (prefer --secret-file)",
    },
    { name: "database-url", value: "URL", summary: "the database (default DATABASE_URL)" },
  ],
  json: false,
  connections: 4,
  summary: "serve the web dashboard: flows, queues, workers, runs and their DAGs, live",
  description:
    "Serves a web dashboard on 127.0.0.1 until Ctrl-C. Every request must carry a token:\n" +
    "open the printed address once (it sets a cookie). The token is random per start unless\n" +
    `--secret-file or ${SECRET_VARIABLE} configures one (at least 16 characters); a --host\n` +
    "other than loopback requires one. Operator actions (clear a restart pause, enable or\n" +
    "disable a worker function) ask for confirmation and are logged here.",
  async run(sql, args, io) {
    const secret = await configuredSecret(args, io);
    if (secret === false) return 2;
    const portText = optionString(args, "port", "4300");
    if (!/^\d{1,5}$/.test(portText)) {
      io.err(
        `Cannot start the dashboard: --port must be a number, got ${JSON.stringify(portText)}`,
      );
      return 2;
    }
    let dashboard;
    try {
      dashboard = startDashboard(sql, {
        port: Number(portText),
        hostname: optionString(args, "host"),
        secret,
        log: io.out,
      });
    } catch (error) {
      if (!(error instanceof DashboardOptionsError)) throw error;
      io.err(error.message);
      return 2;
    }
    io.out(`sluice dashboard: open ${dashboard.url}`);
    const interrupt = interrupted();
    await interrupt.signalled;
    try {
      await dashboard.close();
    } finally {
      interrupt.stopListening();
    }
    return 0;
  },
};
