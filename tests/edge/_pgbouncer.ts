// A real PgBouncer in transaction mode (what Supabase's transaction pooler on port 6543 is) in
// front of a test database: started on a free port with a generated configuration, stopped on
// dispose.

/** A running PgBouncer. */
export interface PgBouncer extends AsyncDisposable {
  /** The test database's URL through PgBouncer. */
  readonly url: string;
}

/** The pgbouncer binary on PATH or in /usr/sbin, or `null` when it is not installed. */
export function pgBouncerBinary(): string | null {
  const dirs = [...(Deno.env.get("PATH") ?? "").split(":"), "/usr/sbin", "/usr/local/sbin"];
  for (const dir of dirs) {
    if (dir === "") continue;
    try {
      if (Deno.statSync(`${dir}/pgbouncer`).isFile) return `${dir}/pgbouncer`;
    } catch {
      // Not there.
    }
  }
  return null;
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/**
 * Starts PgBouncer in transaction mode in front of the server of `databaseUrl` (logging in with
 * the URL's user and password; its own clients are not asked for one), with 4 server connections
 * per database; resolves once it accepts connections.
 */
export async function startPgBouncer(databaseUrl: string): Promise<PgBouncer> {
  const binary = pgBouncerBinary();
  if (binary === null) throw new Error("Cannot start PgBouncer: no pgbouncer binary installed");
  const target = new URL(databaseUrl);
  const port = freePort();
  const dir = await Deno.makeTempDir({ prefix: "sluice-pgbouncer-" });
  const config = `${dir}/pgbouncer.ini`;
  await Deno.writeTextFile(
    config,
    [
      "[databases]",
      `* = host=${target.hostname} port=${target.port} user=${
        decodeURIComponent(target.username)
      }` +
      (target.password === "" ? "" : ` password=${decodeURIComponent(target.password)}`),
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = any",
      "pool_mode = transaction",
      "default_pool_size = 4",
      "max_client_conn = 200",
      "ignore_startup_parameters = extra_float_digits,options",
      // PgBouncer refuses to run as root; then it switches to the user the test server runs as.
      ...(Deno.uid() === 0 ? ["user = postgres"] : []),
      "",
    ].join("\n"),
  );
  const child = new Deno.Command(binary, {
    args: [config],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.finally(() => exited = true);
  const url = new URL(databaseUrl);
  url.port = String(port);
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      break;
    } catch (error) {
      if (exited || Date.now() > deadline) {
        if (!exited) child.kill("SIGKILL");
        await status;
        await Deno.remove(dir, { recursive: true });
        throw new Error(
          `Cannot start PgBouncer: it ${exited ? "exited" : "never listened"}: ${await stderr}`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return {
    url: url.href,
    async [Symbol.asyncDispose]() {
      if (!exited) child.kill("SIGTERM");
      await status;
      await stderr.catch(() => {});
      await Deno.remove(dir, { recursive: true });
    },
  };
}
