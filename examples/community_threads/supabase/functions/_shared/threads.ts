/**
 * The domain operations on `threads`, `classifications` and `deliveries`, shared by both versions.
 * Each keeps the state machine `new -> classified -> alerted | ignored | failed` (enforced by the
 * `threads_guard_transition` trigger) and is safe to repeat: work delivered twice finds the
 * thread already moved on and changes nothing.
 *
 * @module
 */

import type { Sql, TransactionSql } from "postgres";
import type { Classification, ThreadText } from "./classifier.ts";
import { postAlert, type PostResult, type SlackSettings } from "./slack.ts";

/** A new thread as it arrives. */
export interface NewThread extends ThreadText {}

/** What a classification did to its thread. */
export type ClassifyOutcome =
  /** The thread is now `classified` (urgent: a delivery is pending) or `ignored`. */
  | "recorded"
  /** It was classified before (a repeated delivery of the same work): nothing changed. */
  | "already_recorded";

/** What a delivery attempt did. */
export type DeliveryOutcome =
  | PostResult
  /** The alert went out on an earlier attempt: nothing was posted. */
  | { readonly kind: "already_sent"; readonly ts: string | null }
  /** The delivery was given up on earlier: nothing was posted. */
  | { readonly kind: "already_failed" };

/**
 * Inserts a thread in status `new` and returns its id. Call it in the transaction that also hands
 * the thread to classification, so that no thread is stored without its work.
 */
export async function insertThread(
  tx: TransactionSql,
  thread: NewThread,
): Promise<number> {
  const [row] = await tx<{ id: number }[]>`
    insert into public.threads (title, body) values (${thread.title}, ${thread.body}) returning id
  `;
  return row.id;
}

/**
 * Reads a thread's text.
 *
 * @throws {Error} When no thread has id `threadId`.
 */
export async function loadThread(
  sql: Sql,
  threadId: number,
): Promise<ThreadText> {
  const [row] = await sql<ThreadText[]>`
    select title, body from public.threads where id = ${threadId}
  `;
  if (row === undefined) {
    throw new Error(`Cannot load thread ${threadId}: no such thread`);
  }
  return row;
}

/**
 * Records `classification` and moves the thread to `classified`, then on to `ignored` when it is
 * not urgent; an urgent thread gets a pending delivery. Run it in a transaction: the thread row is
 * locked first, so two workers classifying the same thread serialize and the second one finds it
 * `already_recorded`.
 */
export async function recordClassification(
  tx: TransactionSql,
  threadId: number,
  classification: Classification,
): Promise<ClassifyOutcome> {
  const [thread] = await tx<{ status: string }[]>`
    select status from public.threads where id = ${threadId} for update
  `;
  if (thread === undefined) {
    throw new Error(`Cannot classify thread ${threadId}: no such thread`);
  }
  if (thread.status !== "new") return "already_recorded";
  const { category, urgency, urgent } = classification;
  await tx`
    insert into public.classifications (thread_id, category, urgency, urgent)
    values (${threadId}, ${category}, ${urgency}, ${urgent})
  `;
  await tx`update public.threads set status = 'classified' where id = ${threadId}`;
  if (urgent) {
    await tx`insert into public.deliveries (thread_id) values (${threadId})`;
  } else {
    await tx`update public.threads set status = 'ignored' where id = ${threadId}`;
  }
  return "recorded";
}

/**
 * One delivery attempt: unless the alert was already sent or given up on, counts the attempt,
 * posts the alert once and, when Slack accepted it, stores its timestamp and moves the thread to
 * `alerted` in one transaction. A failed post only records its reason; retrying and giving up
 * ({@linkcode recordDeliveryFailed}) are the caller's decisions.
 */
export async function attemptDelivery(
  sql: Sql,
  slack: SlackSettings,
  threadId: number,
  signal?: AbortSignal,
): Promise<DeliveryOutcome> {
  const [pending] = await sql<
    { category: string; urgency: number; title: string }[]
  >`
    update public.deliveries d
    set posts_tried = d.posts_tried + 1, updated_at = clock_timestamp()
    from public.threads t, public.classifications c
    where d.thread_id = ${threadId} and d.status = 'pending'
      and t.id = d.thread_id and c.thread_id = d.thread_id
    returning c.category, c.urgency, t.title
  `;
  if (pending === undefined) return await settledDelivery(sql, threadId);
  const text =
    `[${pending.category}, urgency ${pending.urgency}] ${pending.title} (thread ${threadId})`;
  const result = await postAlert(slack, { threadId, text }, signal);
  if (result.kind === "sent") {
    await sql.begin(async (tx) => {
      const [thread] = await tx<{ status: string }[]>`
        select status from public.threads where id = ${threadId} for update
      `;
      // A delivery given up on meanwhile stays failed, but keeps the timestamp of what went out.
      await tx`
        update public.deliveries
        set status = case when status = 'pending' then 'sent' else status end,
          slack_ts = ${result.ts}, updated_at = clock_timestamp()
        where thread_id = ${threadId}
      `;
      if (thread.status === "classified") {
        await tx`update public.threads set status = 'alerted' where id = ${threadId}`;
      }
    });
  } else {
    await sql`
      update public.deliveries set last_error = ${
      failureReason(result)
    }, updated_at = clock_timestamp()
      where thread_id = ${threadId} and status = 'pending'
    `;
  }
  return result;
}

async function settledDelivery(
  sql: Sql,
  threadId: number,
): Promise<DeliveryOutcome> {
  const [row] = await sql<{ status: string; slack_ts: string | null }[]>`
    select status, slack_ts from public.deliveries where thread_id = ${threadId}
  `;
  if (row === undefined) {
    throw new Error(
      `Cannot deliver an alert for thread ${threadId}: it has no delivery`,
    );
  }
  return row.status === "sent"
    ? { kind: "already_sent", ts: row.slack_ts }
    : { kind: "already_failed" };
}

/**
 * Gives up on a thread's alert: the delivery becomes `failed` with `reason` and the thread moves
 * to `failed`. Does nothing when the alert was sent meanwhile. Run it in a transaction.
 */
export async function recordDeliveryFailed(
  tx: TransactionSql,
  threadId: number,
  reason: string,
): Promise<void> {
  const [thread] = await tx<{ status: string }[]>`
    select status from public.threads where id = ${threadId} for update
  `;
  if (thread?.status !== "classified") return;
  await tx`
    update public.deliveries set status = 'failed', last_error = ${reason}, updated_at = clock_timestamp()
    where thread_id = ${threadId} and status = 'pending'
  `;
  await tx`update public.threads set status = 'failed' where id = ${threadId}`;
}

/** Why a post that was not accepted failed, for `deliveries.last_error` and error messages. */
export function failureReason(
  result: Exclude<PostResult, { kind: "sent" }>,
): string {
  switch (result.kind) {
    case "rate_limited":
      return `rate limited by Slack (Retry-After: ${result.retryAfterSeconds} s)`;
    case "failed":
      return result.reason;
  }
}
