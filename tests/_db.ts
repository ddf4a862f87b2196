/**
 * Per-test databases for the suite run by `deno task test` (docs/internals/contracts.md §4): each
 * one is cloned from the migrated template, so tests may commit, NOTIFY and use several connections
 * without seeing each other.
 *
 * @module
 */
import postgres, { type Sql } from "postgres";

/** Options of {@linkcode freshDatabase}. */
export interface FreshDatabaseOptions {
  /**
   * Clone `template0` instead of the migrated template: an empty database without PGMQ or sluice,
   * for tests of the installer and the migration runner themselves.
   *
   * @default {false}
   */
  empty?: boolean;
}

/** A database of one test; disposing it closes every client and drops the database. */
export interface TestDatabase extends AsyncDisposable {
  /** A client with a pool of 4 connections. */
  sql: Sql;
  /** Connection URL of the database. */
  url: string;
  /** Name of the database. */
  name: string;
  /**
   * Opens another independent client to the same database, e.g. for concurrency tests; disposing
   * the database ends it.
   *
   * @param max Pool size of the new client. @default {4}
   */
  connect(max?: number): Sql;
}

const ADMIN_URL_VARIABLE = "SLUICE_TEST_ADMIN_URL";
const TEMPLATE_VARIABLE = "SLUICE_TEST_TEMPLATE";
const INSTALLED_PGMQ_VARIABLE = "SLUICE_TEST_PGMQ_INSTALLED";
const PGMQ_FLAVOUR_VARIABLE = "SLUICE_TEST_PGMQ_FLAVOUR";

/**
 * How the template got PGMQ: `extension` (the server offers `create extension pgmq`: the real
 * PGMQ under `SLUICE_TEST_PGMQ=extension`, sluice's compat layer packaged as the extension under
 * `packaged`) or `compat` (sluice's compat layer, installed because the server lacks the
 * extension). Only tests of the installer, the migrations and the compat layer itself may depend
 * on it; see {@linkcode pgmqFlavour} for which implementation runs.
 *
 * @example
 * ```ts ignore
 * import { installedPgmq } from "./_db.ts";
 * Deno.test({ name: "compat only", ignore: installedPgmq() !== "compat", fn() {} });
 * ```
 */
export function installedPgmq(): "compat" | "extension" {
  const value = Deno.env.get(INSTALLED_PGMQ_VARIABLE);
  if (value !== "compat" && value !== "extension") {
    throw new Error(
      `Cannot tell which PGMQ the test server has: ${INSTALLED_PGMQ_VARIABLE} is ` +
        `${value === undefined ? "not set" : `"${value}"`}; run the tests with 'deno task test'`,
    );
  }
  return value;
}

/**
 * Which PGMQ implementation the suite runs on: `real` (the PGMQ extension's own SQL), `packaged`
 * (sluice's compat layer installed as extension pgmq) or `compat` (sluice's compat layer as plain
 * SQL). A test that behaves differently on the real extension reads it and says why in its name
 * or a comment.
 *
 * @example
 * ```ts ignore
 * import { pgmqFlavour } from "./_db.ts";
 * // The real 1.5.1 lets the loser of two concurrent create() calls fail; the compat layer waits.
 * Deno.test({ name: "compat only", ignore: pgmqFlavour() === "real", fn() {} });
 * ```
 */
export function pgmqFlavour(): "compat" | "packaged" | "real" {
  const value = Deno.env.get(PGMQ_FLAVOUR_VARIABLE);
  if (value !== "compat" && value !== "packaged" && value !== "real") {
    throw new Error(
      `Cannot tell which PGMQ the test server runs: ${PGMQ_FLAVOUR_VARIABLE} is ` +
        `${value === undefined ? "not set" : `"${value}"`}; run the tests with 'deno task test'`,
    );
  }
  return value;
}

/**
 * The superuser URL of the test server (database `postgres`), from `SLUICE_TEST_ADMIN_URL`.
 *
 * @example
 * ```ts ignore
 * import { adminUrl } from "./_db.ts";
 * console.log(adminUrl()); // postgres://postgres@127.0.0.1:41234/postgres
 * ```
 */
export function adminUrl(): string {
  const url = Deno.env.get(ADMIN_URL_VARIABLE);
  if (url === undefined || url === "") {
    throw new Error(
      `Cannot reach the test database server: ${ADMIN_URL_VARIABLE} is not set; ` +
        "run the tests with 'deno task test'",
    );
  }
  return url;
}

/**
 * The URL of database `name` on the server at `url` (same credentials and parameters).
 *
 * @example
 * ```ts
 * import { databaseUrl } from "./_db.ts";
 * console.log(databaseUrl("postgres://postgres@127.0.0.1:5432/postgres", "t_1"));
 * // postgres://postgres@127.0.0.1:5432/t_1
 * ```
 */
export function databaseUrl(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(name)}`;
  return parsed.href;
}

/**
 * The `login` clause of a test's own role that signs in with the URL's password: the throwaway
 * server asks every connection for one (SCRAM), and a test that swaps only the URL's user name then
 * needs no password of its own. Without a password in the URL (a trusting server), just `login`.
 *
 * @example
 * ```ts
 * import { loginWithUrlPassword } from "./_db.ts";
 * console.log(loginWithUrlPassword("postgres://postgres:it's@127.0.0.1:5432/postgres"));
 * // login password 'it''s'
 * ```
 */
export function loginWithUrlPassword(url: string): string {
  const password = decodeURIComponent(new URL(url).password);
  return password === "" ? "login" : `login password '${password.replaceAll("'", "''")}'`;
}

/**
 * Creates a database cloned from the migrated template and returns a client for it.
 *
 * @example
 * ```ts ignore
 * import { freshDatabase } from "./_db.ts";
 * Deno.test("queues start empty", async () => {
 *   await using db = await freshDatabase();
 *   const rows = await db.sql`select * from pgmq.list_queues()`;
 * });
 * ```
 */
export async function freshDatabase(options: FreshDatabaseOptions = {}): Promise<TestDatabase> {
  const admin = adminUrl();
  const template = options.empty ? "template0" : templateName();
  const name = `t_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
  await withAdmin(admin, async (sql) => {
    for (let attempt = 1;; attempt++) {
      try {
        await sql.unsafe(`create database "${name}" template "${template}"`);
        return;
      } catch (error) {
        // CREATE DATABASE fails while anything is connected to the template (a late disconnect of
        // the runner, autovacuum): brief retries ride that out.
        const busy = (error as { code?: string }).code === "55006";
        if (!busy || attempt === 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  });
  const url = databaseUrl(admin, name);
  const clients: Sql[] = [];
  const connect = (max = 4) => {
    const client = postgres(url, { prepare: false, max, onnotice: () => {} });
    clients.push(client);
    return client;
  };
  const sql = connect();
  return {
    sql,
    url,
    name,
    connect,
    async [Symbol.asyncDispose]() {
      // Bounded: postgres.js 3.4.9's end() once waited forever here on a connection the server
      // showed idle (CI, a community-threads scenario); after 5 s it destroys the connections.
      await Promise.all(clients.map((client) => client.end({ timeout: 5 })));
      await withAdmin(admin, (sql) => sql.unsafe(`drop database if exists "${name}" with (force)`));
    },
  };
}

function templateName(): string {
  const name = Deno.env.get(TEMPLATE_VARIABLE);
  if (name === undefined || name === "") {
    throw new Error(
      `Cannot create a test database: ${TEMPLATE_VARIABLE} is not set; ` +
        "run the tests with 'deno task test'",
    );
  }
  return name;
}

// A short-lived admin client per call: a pool kept open across tests would trip Deno's resource
// sanitizer in every test that happens to run while it is idle.
async function withAdmin<T>(url: string, fn: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = postgres(url, { prepare: false, max: 1, onnotice: () => {} });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
