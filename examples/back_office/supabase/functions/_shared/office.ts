/**
 * The back office's domain reads and writes, shared by every flow: each function is one small,
 * idempotent piece of work against the domain tables, so a retried step does not repeat it.
 *
 * @module
 */

import type { Sql } from "postgres";
import type { Services } from "./services.ts";

/** An account, as the jobs need it. */
export interface Account {
  readonly id: number;
  readonly email: string;
  readonly name: string;
  readonly plan: string;
  readonly trialEndsAt: Date | null;
}

/** Reads account `id`; throws naming it when there is none. */
export async function loadAccount(sql: Sql, id: number): Promise<Account> {
  const [row] = await sql<Account[]>`
    select id, email, name, plan, trial_ends_at as "trialEndsAt"
    from public.accounts where id = ${id}`;
  if (row === undefined) throw new Error(`account ${id} does not exist`);
  return row;
}

/**
 * Mails `account` once per (`kind`, `dedupeKey`): a retry after the provider accepted the mail
 * finds the row and does not send again. Returns the email row's id.
 */
export async function mailOnce(
  sql: Sql,
  services: Services,
  account: Account,
  mail: { kind: string; dedupeKey?: string; subject: string; body: string },
  signal: AbortSignal,
): Promise<number> {
  const dedupeKey = mail.dedupeKey ?? "";
  const [sent] = await sql<{ id: number }[]>`
    select id from public.emails
    where account_id = ${account.id} and kind = ${mail.kind} and dedupe_key = ${dedupeKey}`;
  if (sent !== undefined) return sent.id;
  const providerId = await services.sendMail(
    { to: account.email, subject: mail.subject, body: mail.body },
    signal,
  );
  const [row] = await sql<{ id: number }[]>`
    insert into public.emails (account_id, kind, dedupe_key, subject, provider_id)
    values (${account.id}, ${mail.kind}, ${dedupeKey}, ${mail.subject}, ${providerId})
    on conflict (account_id, kind, dedupe_key) do update set kind = excluded.kind
    returning id`;
  return row.id;
}

/** Stores an object at `path` (the storage bucket's stand-in); returns its checksum. */
export async function storeObject(
  sql: Sql,
  path: string,
  contentType: string,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const checksum = Array.from(hash.slice(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
  await sql`
    insert into public.stored_objects (path, content_type, bytes, checksum)
    values (${path}, ${contentType}, ${bytes.length}, ${checksum})
    on conflict (path) do update set content_type = excluded.content_type,
      bytes = excluded.bytes, checksum = excluded.checksum, stored_at = clock_timestamp()`;
  return checksum;
}

/** A hex SHA-256 of `text`. */
export async function sha256(text: string): Promise<string> {
  const hash = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  return Array.from(hash, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The refund amount up to which a low-risk refund is approved without a person. */
export const AUTO_APPROVE_CENTS = 10_000;

/**
 * A refund's risk, 0 (none) to 100: large amounts, refunds of fresh orders and accounts with
 * many refunds score higher.
 */
export function riskScore(
  amountCents: number,
  orderAgeHours: number,
  earlierRefunds: number,
): number {
  const amount = Math.min(50, Math.round(amountCents / 1_000));
  const fresh = orderAgeHours < 1 ? 20 : 0;
  return Math.min(100, amount + fresh + 15 * earlierRefunds);
}

/** Monday of the week that contains `day`, as `YYYY-MM-DD`. */
export function weekOf(day: Date): string {
  const monday = new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate()));
  monday.setUTCDate(monday.getUTCDate() - ((monday.getUTCDay() + 6) % 7));
  return monday.toISOString().slice(0, 10);
}
