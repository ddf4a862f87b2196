/**
 * A throwaway PostgreSQL cluster for tests and local runs: created in a fresh temp dir, started on a
 * free loopback port, stopped and removed at the end — also when the owning process is killed.
 * Development infrastructure (`deno task test`, `deno task demo`, the benchmarks): not part of the
 * published package.
 *
 * @module
 */

/** The PostgreSQL server programs {@linkcode startTempPostgres} runs. */
export interface PostgresBinaries {
  /** Absolute path of `initdb`. */
  initdb: string;
  /** Absolute path of `pg_ctl` (from the same directory as `initdb`). */
  pgCtl: string;
}

/** Where {@linkcode findPostgresBinaries} looks for `initdb` and `pg_ctl`. */
export interface FindPostgresBinariesOptions {
  /**
   * A `PATH`-style list of directories searched first.
   *
   * @default {Deno.env.get("PATH")}
   */
  path?: string;
  /**
   * Directory whose `<version>/bin` subdirectories (Debian layout) are searched next, highest
   * version first.
   *
   * @default {"/usr/lib/postgresql"}
   */
  postgresqlRoot?: string;
}

/** Options of {@linkcode startTempPostgres}. */
export interface StartTempPostgresOptions extends FindPostgresBinariesOptions {
  /**
   * Extra server settings, appended to `postgresql.conf` after the test defaults (fsync off,
   * `max_connections` 200, ...), so they win.
   *
   * @default {{}}
   */
  settings?: Record<string, string | number | boolean>;
  /**
   * Seconds between the guardian's checks whether the owning process is still alive.
   *
   * @default {0.5}
   */
  guardianIntervalSeconds?: number;
}

/** A running throwaway cluster. Dispose it (or call `stop()`) to stop it and delete its files. */
export interface TempPostgres extends AsyncDisposable {
  /**
   * Connection URL of the superuser `postgres` to database `postgres` over TCP, with its password:
   * the server asks every connection for it (SCRAM-SHA-256).
   */
  url: string;
  /** The password of user `postgres`, generated for this start (also in `url`). */
  password: string;
  /** The TCP port on 127.0.0.1. */
  port: number;
  /** The cluster's data directory (inside a temp dir that is removed on stop). */
  dataDir: string;
  /** Process id of the postmaster. */
  pid: number;
  /** Stops the server and removes its temp dir. Safe to call more than once. */
  stop(): Promise<void>;
  /**
   * Runs `pg_ctl` on the cluster, waiting for it, for outages: `stop` (`fast` shuts down cleanly,
   * `immediate` as after a crash), `start` (on the same port, resolving once it accepts
   * connections) and `restart`.
   */
  control(action: "stop" | "start" | "restart", mode?: "fast" | "immediate"): Promise<void>;
}

/** Thrown when neither `PATH` nor the Debian layout holds `initdb` and `pg_ctl`. */
export class PostgresNotFoundError extends Error {
  /** Directories that were searched, in order. */
  searched: string[];

  /**
   * @param searched Directories that were searched, in order.
   * @param postgresqlRoot The Debian-layout root that was searched, for the message.
   */
  constructor(searched: string[], postgresqlRoot: string) {
    super(
      `Cannot start PostgreSQL: no initdb found on PATH or in ${postgresqlRoot}/*/bin; ` +
        "install it with 'apt-get install postgresql' or set DATABASE_URL",
    );
    this.name = "PostgresNotFoundError";
    this.searched = searched;
  }
}

/** Thrown when `initdb` or `pg_ctl` exits unsuccessfully. */
export class TempPostgresError extends Error {
  /** The command line that failed. */
  command: string[];
  /** Its exit code. */
  code: number;
  /** Its output (stdout, stderr and, for `pg_ctl start`, the server log). */
  output: string;

  /**
   * @param command The command line that failed.
   * @param code Its exit code.
   * @param output What it printed.
   */
  constructor(command: string[], code: number, output: string) {
    super(`Cannot start PostgreSQL: "${command.join(" ")}" exited with code ${code}: ${output}`);
    this.name = "TempPostgresError";
    this.command = command;
    this.code = code;
    this.output = output;
  }
}

/**
 * Finds `initdb` and `pg_ctl`: on `PATH` first, then in `/usr/lib/postgresql/<version>/bin`, highest
 * version first.
 *
 * @example Check whether a throwaway cluster can be started
 * ```ts
 * import { findPostgresBinaries } from "./temp_postgres.ts";
 * const { initdb } = await findPostgresBinaries();
 * console.log(initdb);
 * ```
 *
 * @throws {PostgresNotFoundError} when no directory holds both programs.
 */
export async function findPostgresBinaries(
  options: FindPostgresBinariesOptions = {},
): Promise<PostgresBinaries> {
  const root = options.postgresqlRoot ?? "/usr/lib/postgresql";
  const path = options.path ?? Deno.env.get("PATH") ?? "";
  const dirs = path.split(":").filter((dir) => dir !== "");
  dirs.push(...(await versionedBinDirs(root)));
  for (const dir of dirs) {
    const initdb = await realExecutable(`${dir}/initdb`);
    if (initdb === undefined) continue;
    // Use pg_ctl from initdb's real directory: a PATH symlink may point into one version while
    // another version's pg_ctl comes first on PATH.
    const binDir = initdb.slice(0, initdb.lastIndexOf("/"));
    const pgCtl = await realExecutable(`${binDir}/pg_ctl`);
    if (pgCtl !== undefined) return { initdb, pgCtl };
  }
  throw new PostgresNotFoundError(dirs, root);
}

/**
 * Creates a PostgreSQL cluster in a fresh temp dir and starts it on a free port of 127.0.0.1, with
 * settings for fast tests (no fsync). Every connection, over TCP or the Unix socket, must prove it
 * knows the password generated for this start (SCRAM-SHA-256; it is in `url`): another local user
 * cannot log in, and the socket's directory is private to the server's OS user (mode 0700). A
 * detached guardian process
 * stops the server and removes the dir if this process dies without calling `stop()`. As root, the
 * server runs as the `postgres` OS user.
 *
 * @example Run a query against a throwaway server
 * ```ts ignore
 * import postgres from "postgres";
 * import { startTempPostgres } from "./temp_postgres.ts";
 * await using pg = await startTempPostgres();
 * const sql = postgres(pg.url);
 * console.log(await sql`select version()`);
 * await sql.end();
 * ```
 *
 * @throws {PostgresNotFoundError} when `initdb`/`pg_ctl` cannot be found.
 * @throws {TempPostgresError} when `initdb` or `pg_ctl start` fails.
 */
export async function startTempPostgres(
  options: StartTempPostgresOptions = {},
): Promise<TempPostgres> {
  const binaries = await findPostgresBinaries(options);
  const runAs = await serverUser();
  const dir = await Deno.makeTempDir({ prefix: "sluice-pg-" });
  const dataDir = `${dir}/data`;
  const password = generatePassword();
  let guardian: Deno.ChildProcess | undefined;
  try {
    // The dir holds the Unix socket, the log and the password file: the server's OS user only.
    await Deno.chmod(dir, 0o700);
    if (runAs !== undefined) await Deno.chown(dir, runAs.uid, runAs.gid);
    // The guardian starts before the server exists so that no window is left in which a killed
    // owner would leave a running postmaster behind.
    guardian = spawnGuardian(binaries.pgCtl, dir, dataDir, runAs, options);
    // initdb reads the password from a file (not argv, which `ps` shows), removed right after.
    const pwfile = `${dir}/pwfile`;
    await Deno.writeTextFile(pwfile, `${password}\n`, { mode: 0o600 });
    if (runAs !== undefined) await Deno.chown(pwfile, runAs.uid, runAs.gid);
    try {
      await run(runAs, [
        binaries.initdb,
        "--pgdata",
        dataDir,
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--auth=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions",
      ]);
    } finally {
      await Deno.remove(pwfile);
    }
    await Deno.writeTextFile(`${dataDir}/postgresql.conf`, serverConfig(dir, options.settings), {
      append: true,
    });
    const { port, pid } = await startServer(binaries.pgCtl, dir, dataDir, runAs);
    let stopping: Promise<void> | undefined;
    const started = guardian;
    const stop = () => stopping ??= stopAndRemove(binaries.pgCtl, dir, dataDir, runAs, started);
    const control = (action: "stop" | "start" | "restart", mode?: "fast" | "immediate") =>
      run(runAs, [
        binaries.pgCtl,
        action,
        "--pgdata",
        dataDir,
        "--wait",
        "--timeout=60",
        "--log",
        `${dir}/server.log`,
        ...(mode === undefined ? [] : [`--mode=${mode}`]),
        ...(action === "start" ? ["-o", `-p ${port}`] : []),
      ]);
    return {
      url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
      password,
      port,
      dataDir,
      pid,
      stop,
      control,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await stopAndRemove(binaries.pgCtl, dir, dataDir, runAs, guardian);
    throw error;
  }
}

/** 24 random bytes, base64url: 32 characters that need no escaping in a URL. */
function generatePassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll("/", "_");
}

interface OsUser {
  name: string;
  uid: number;
  gid: number;
}

/** PostgreSQL refuses to run as root; then the server runs as the `postgres` OS user. */
async function serverUser(): Promise<OsUser | undefined> {
  if (Deno.uid() !== 0) return undefined;
  const passwd = await Deno.readTextFile("/etc/passwd");
  for (const line of passwd.split("\n")) {
    const [name, , uid, gid] = line.split(":");
    if (name === "postgres") return { name, uid: Number(uid), gid: Number(gid) };
  }
  throw new Error(
    'Cannot start PostgreSQL as root: no OS user "postgres" exists to run the server; ' +
      "create it with 'useradd --system postgres' or run as a non-root user",
  );
}

async function versionedBinDirs(root: string): Promise<string[]> {
  const versions: number[] = [];
  try {
    for await (const entry of Deno.readDir(root)) {
      if (/^\d+(\.\d+)?$/.test(entry.name)) versions.push(Number(entry.name));
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return versions.sort((a, b) => b - a).map((version) => `${root}/${version}/bin`);
}

async function realExecutable(path: string): Promise<string | undefined> {
  try {
    const real = await Deno.realPath(path);
    const info = await Deno.stat(real);
    return info.isFile && ((info.mode ?? 0) & 0o111) !== 0 ? real : undefined;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.PermissionDenied) {
      return undefined;
    }
    throw error;
  }
}

function serverConfig(dir: string, settings: StartTempPostgresOptions["settings"] = {}): string {
  const lines = {
    listen_addresses: "127.0.0.1",
    unix_socket_directories: dir,
    // Durability is worthless for a throwaway cluster; these make DDL-heavy tests several times
    // faster.
    fsync: false,
    synchronous_commit: false,
    full_page_writes: false,
    // Test files run in parallel, each with a few pools of its own.
    max_connections: 200,
    ...settings,
  };
  const quote = (value: string | number | boolean) =>
    typeof value === "string" ? `'${value.replaceAll("'", "''")}'` : String(value);
  return "\n# sluice throwaway cluster\n" +
    Object.entries(lines).map(([key, value]) => `${key} = ${quote(value)}\n`).join("");
}

/** Starts the server on a free port, retrying when another process takes the port first. */
async function startServer(
  pgCtl: string,
  dir: string,
  dataDir: string,
  runAs: OsUser | undefined,
): Promise<{ port: number; pid: number }> {
  const attempts = 5;
  for (let attempt = 1;; attempt++) {
    const port = freePort();
    const logFile = `${dir}/server.log`;
    try {
      await run(runAs, [
        pgCtl,
        "start",
        "--pgdata",
        dataDir,
        "--wait",
        "--timeout=60",
        "--log",
        logFile,
        "-o",
        `-p ${port}`,
      ]);
    } catch (error) {
      const log = await Deno.readTextFile(logFile).catch(() => "");
      const portTaken = /could not bind|address already in use/i.test(log);
      if (portTaken && attempt < attempts) continue;
      if (error instanceof TempPostgresError) {
        throw new TempPostgresError(error.command, error.code, `${error.output}\n${log}`.trim());
      }
      throw error;
    }
    const pidFile = await Deno.readTextFile(`${dataDir}/postmaster.pid`);
    return { port, pid: Number(pidFile.split("\n")[0]) };
  }
}

/** A port the kernel just handed out is very likely still free a moment later. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

async function run(runAs: OsUser | undefined, command: string[]): Promise<void> {
  const argv = runAs === undefined ? command : ["runuser", "-u", runAs.name, "--", ...command];
  const { code, stdout, stderr } = await new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    // initdb picks its defaults from the locale environment; keep the cluster independent of it.
    env: { LC_ALL: "C", LANG: "C" },
  }).output();
  if (code !== 0) {
    const decoder = new TextDecoder();
    const output = `${decoder.decode(stdout)}${decoder.decode(stderr)}`.trim();
    throw new TempPostgresError(argv, code, output);
  }
}

// The guardian runs detached, i.e. in its own session: Deno does not kill it when the owner exits,
// and signals sent to the owner's process group (Ctrl-C, a CI timeout killing the group) do not
// reach it. It exits once the dir is gone (normal stop), or cleans up once the owner is gone: its
// /proc entry vanished, turned into a zombie, or belongs to a newer process with the same pid (start
// time differs). Should the owner die during `pg_ctl start`, the postmaster may appear after the
// check below; it shuts itself down within a minute once its data directory is gone.
const GUARDIAN_SCRIPT = `
owner=$1 pg_ctl=$2 dir=$3 data=$4 interval=$5 run_as=$6
stat_of() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; echo "\${s##*) }"; }
owner_start=$(stat_of "$owner" | cut -d' ' -f20)
owner_alive() {
  local s; s=$(stat_of "$owner") || return 1
  [ "\${s%% *}" != Z ] && [ "$(echo "$s" | cut -d' ' -f20)" = "$owner_start" ]
}
while [ -d "$dir" ] && owner_alive; do sleep "$interval"; done
[ -d "$dir" ] || exit 0
if [ -f "$data/postmaster.pid" ]; then
  if [ -n "$run_as" ]; then
    runuser -u "$run_as" -- "$pg_ctl" stop --pgdata "$data" --mode immediate --wait >/dev/null 2>&1
  else
    "$pg_ctl" stop --pgdata "$data" --mode immediate --wait >/dev/null 2>&1
  fi
fi
rm -rf "$dir"
`;

function spawnGuardian(
  pgCtl: string,
  dir: string,
  dataDir: string,
  runAs: OsUser | undefined,
  options: StartTempPostgresOptions,
): Deno.ChildProcess {
  const interval = String(options.guardianIntervalSeconds ?? 0.5);
  // A script file rather than `bash -c` keeps `ps` readable. Bash keeps reading it through its open
  // descriptor after the final `rm -rf` deletes it.
  const script = `${dir}/guardian.sh`;
  Deno.writeTextFileSync(script, GUARDIAN_SCRIPT);
  const guardian = new Deno.Command("bash", {
    args: [
      script,
      String(Deno.pid),
      pgCtl,
      dir,
      dataDir,
      interval,
      runAs?.name ?? "",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
  // The guardian must never keep the owner alive: it outlives it on purpose.
  guardian.unref();
  return guardian;
}

async function stopAndRemove(
  pgCtl: string,
  dir: string,
  dataDir: string,
  runAs: OsUser | undefined,
  guardian: Deno.ChildProcess | undefined,
): Promise<void> {
  try {
    const running = await Deno.stat(`${dataDir}/postmaster.pid`).then(() => true, () => false);
    if (running) {
      // Fast mode ends open sessions (tests may leave some) and still shuts down cleanly.
      const stop = [pgCtl, "stop", "--pgdata", dataDir, "--mode", "fast", "--wait", "--timeout=30"];
      await run(runAs, stop).catch(() =>
        run(runAs, [pgCtl, "stop", "--pgdata", dataDir, "--mode", "immediate", "--wait"])
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch((error) => {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    });
    // With the dir gone the guardian ends within one interval; waiting for it keeps callers (and
    // Deno's test sanitizers) from seeing a leaked child process. It was unref'ed, so re-ref it:
    // otherwise the wait alone would not keep the event loop alive.
    if (guardian !== undefined) {
      guardian.ref();
      await guardian.status;
    }
  }
}
