/**
 * `pg_ctl restart -m immediate` of the benchmark's throwaway cluster: every backend is killed at
 * once, without a checkpoint, and the server comes back through crash recovery on the same port.
 *
 * @module
 */
import { findPostgresBinaries } from "../dev/temp_postgres.ts";

/**
 * Restarts the throwaway cluster in `dataDir` (`TempPostgres.dataDir`) in immediate mode and
 * waits until it accepts connections again.
 *
 * @example
 * ```ts ignore
 * import { restartImmediate } from "./_chaos_restart.ts";
 * await restartImmediate(cluster.dataDir);
 * ```
 */
export async function restartImmediate(dataDir: string): Promise<void> {
  const { pgCtl } = await findPostgresBinaries();
  const log = `${dataDir.slice(0, dataDir.lastIndexOf("/"))}/server.log`;
  // postmaster.opts keeps the port; the log must be a file, or the server would hold our pipe.
  const command = [pgCtl, "restart", "--pgdata", dataDir, "--mode", "immediate"];
  command.push("--wait", "--timeout=60", "--log", log);
  // As root, the cluster runs as the OS user postgres (see temp_postgres.ts).
  const argv = Deno.uid() === 0 ? ["runuser", "-u", "postgres", "--", ...command] : command;
  const { code, stdout, stderr } = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
  }).output();
  if (code !== 0) {
    const output = new TextDecoder().decode(new Uint8Array([...stdout, ...stderr])).trim();
    throw new Error(
      `Cannot restart PostgreSQL: "${argv.join(" ")}" exited with code ${code}: ${output}`,
    );
  }
}
