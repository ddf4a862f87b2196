import assert from "node:assert/strict";
import postgres from "postgres";
import {
  findPostgresBinaries,
  PostgresNotFoundError,
  startTempPostgres,
} from "../../dev/temp_postgres.ts";
import { eventually, exists, isPostmasterOf } from "./_postgres_process.ts";

const haveBinaries = await findPostgresBinaries().then(() => true, () => false);
const dirname = (path: string) => path.slice(0, path.lastIndexOf("/"));

async function fakeExecutable(path: string): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true });
  await Deno.writeTextFile(path, "#!/bin/sh\nexit 1\n", { mode: 0o755 });
}

Deno.test({
  name:
    "startTempPostgres() serves queries on loopback and stop() ends the server and removes its dir",
  ignore: !haveBinaries,
  async fn() {
    const pg = await startTempPostgres();
    try {
      const sql = postgres(pg.url, { prepare: false, max: 1 });
      try {
        const [row] = await sql`
          select host(inet_server_addr()) as addr, inet_server_port() as port,
                 current_setting('fsync') as fsync, current_user as "user"
        `;
        assert.deepEqual(row, { addr: "127.0.0.1", port: pg.port, fsync: "off", user: "postgres" });
      } finally {
        await sql.end();
      }
      assert.equal(await isPostmasterOf(pg.pid, pg.dataDir), true);
    } finally {
      await pg.stop();
    }
    assert.equal(
      await eventually(async () => !(await isPostmasterOf(pg.pid, pg.dataDir)), 5000),
      true,
    );
    assert.equal(await exists(dirname(pg.dataDir)), false);
    await pg.stop(); // a second stop is a no-op
  },
});

Deno.test({
  name:
    "startTempPostgres() asks every connection for its generated password, over TCP and the socket",
  ignore: !haveBinaries,
  async fn() {
    await using pg = await startTempPostgres();
    const url = new URL(pg.url);
    const socketDir = dirname(pg.dataDir);
    assert.equal((await Deno.stat(socketDir)).mode! & 0o777, 0o700);
    const refusal = async (options: postgres.Options<Record<string, never>>) => {
      const sql = postgres({ ...options, prepare: false, max: 1, connect_timeout: 30 });
      try {
        return await sql`select 1`.then(() => "connected", (error) => error.code);
      } finally {
        await sql.end();
      }
    };
    const tcp = { host: "127.0.0.1", port: pg.port, database: "postgres", username: "postgres" };
    const socket = { ...tcp, host: socketDir };
    // 28P01: invalid_password; postgres.js sends an empty password when none is given.
    assert.equal(await refusal(tcp), "28P01", "TCP without a password");
    assert.equal(await refusal({ ...tcp, password: "wrong" }), "28P01", "a wrong password");
    assert.equal(await refusal(socket), "28P01", "the Unix socket without a password");
    assert.equal(await refusal({ ...tcp, password: pg.password }), "connected");
    assert.equal(await refusal({ ...socket, password: pg.password }), "connected");
    assert.match(pg.password, /^[A-Za-z0-9_-]{32}$/);
    assert.equal(decodeURIComponent(url.password), pg.password);
  },
});

/** Runs the owner script, returns the cluster it reported once it is reachable. */
async function abandonedCluster(mode: "exit" | "wait") {
  const owner = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_temp_postgres_owner.ts", import.meta.url).pathname, mode],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = owner.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let output = "";
  while (!output.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    output += value;
  }
  const cluster: { pid: number; dataDir: string; url: string } = JSON.parse(output);
  return { owner, reader, cluster };
}

async function assertCleanedUp(cluster: { pid: number; dataDir: string }): Promise<void> {
  const cleaned = await eventually(
    async () =>
      !(await isPostmasterOf(cluster.pid, cluster.dataDir)) &&
      !(await exists(dirname(cluster.dataDir))),
    10_000,
  );
  assert.equal(
    cleaned,
    true,
    `postmaster ${cluster.pid} or ${dirname(cluster.dataDir)} left behind`,
  );
}

Deno.test({
  name: "a throwaway cluster is stopped and removed when its owning process is SIGKILLed",
  ignore: !haveBinaries,
  async fn() {
    const { owner, reader, cluster } = await abandonedCluster("wait");
    // It really serves queries before the kill.
    const sql = postgres(cluster.url, { prepare: false, max: 1 });
    assert.deepEqual([...await sql`select 1 as one`], [{ one: 1 }]);
    await sql.end();
    assert.equal(await isPostmasterOf(cluster.pid, cluster.dataDir), true);

    owner.kill("SIGKILL");
    assert.equal((await owner.status).signal, "SIGKILL");
    await reader.cancel();
    await assertCleanedUp(cluster);
  },
});

Deno.test({
  name: "a throwaway cluster is stopped and removed when its owner exits without stopping it",
  ignore: !haveBinaries,
  async fn() {
    const { owner, reader, cluster } = await abandonedCluster("exit");
    assert.equal((await owner.status).code, 0);
    await reader.cancel();
    await assertCleanedUp(cluster);
  },
});

Deno.test("startTempPostgres() names the fix in one line when no initdb exists", async () => {
  const empty = await Deno.makeTempDir();
  try {
    const error = await startTempPostgres({ path: empty, postgresqlRoot: `${empty}/postgresql` })
      .then(() => undefined, (error) => error);
    assert.ok(error instanceof PostgresNotFoundError);
    assert.equal(
      error.message,
      `Cannot start PostgreSQL: no initdb found on PATH or in ${empty}/postgresql/*/bin; ` +
        "install it with 'apt-get install postgresql' or set DATABASE_URL",
    );
    assert.deepEqual(error.searched, [empty]);
  } finally {
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test("findPostgresBinaries() prefers PATH, then the highest installed version", async () => {
  const root = await Deno.realPath(await Deno.makeTempDir());
  try {
    for (const version of ["9.6", "14", "16"]) {
      await fakeExecutable(`${root}/postgresql/${version}/bin/initdb`);
      await fakeExecutable(`${root}/postgresql/${version}/bin/pg_ctl`);
    }
    // initdb without pg_ctl beside it does not count.
    await fakeExecutable(`${root}/incomplete/initdb`);
    const versioned = await findPostgresBinaries({
      path: `${root}/incomplete`,
      postgresqlRoot: `${root}/postgresql`,
    });
    assert.deepEqual(versioned, {
      initdb: `${root}/postgresql/16/bin/initdb`,
      pgCtl: `${root}/postgresql/16/bin/pg_ctl`,
    });

    // A PATH entry symlinking into version 14 wins, with pg_ctl taken from initdb's real dir.
    await Deno.mkdir(`${root}/path`);
    await Deno.symlink(`${root}/postgresql/14/bin/initdb`, `${root}/path/initdb`);
    const onPath = await findPostgresBinaries({
      path: `${root}/path:${root}/incomplete`,
      postgresqlRoot: `${root}/postgresql`,
    });
    assert.deepEqual(onPath, {
      initdb: `${root}/postgresql/14/bin/initdb`,
      pgCtl: `${root}/postgresql/14/bin/pg_ctl`,
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
