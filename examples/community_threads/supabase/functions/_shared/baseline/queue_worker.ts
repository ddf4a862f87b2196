/**
 * The baseline's queue worker: what a team writes around PGMQ without a workflow engine. It reads
 * messages with a visibility timeout (the claim), runs a handler on each, deletes a message once
 * handled, hides it again for a backoff or a `Retry-After` when the handler asks for a retry or
 * throws, and moves it to a dead-letter queue once it has been read `maxAttempts` times. A worker
 * that dies leaves its messages to reappear when their visibility timeout ends.
 *
 * @module
 */

import type { Sql, TransactionSql } from "postgres";

/** What a handler wants done with its message. */
export type HandlerOutcome =
  /** Handled: delete the message. */
  | { readonly kind: "done" }
  /** Read it again after `delaySeconds` (an attempt is used up). */
  | {
    readonly kind: "retry";
    readonly delaySeconds: number;
    readonly reason: string;
  };

/** A message as read from PGMQ. */
export interface QueueMessage<Body> {
  /** The PGMQ message id. */
  readonly msgId: number;
  /** How many times it was read, this read included: the attempt number. */
  readonly readCount: number;
  /** The message body. */
  readonly body: Body;
}

/** Options of {@linkcode startQueueWorker}. */
export interface QueueWorkerOptions<Body> {
  /** The pool to use; the worker never closes it. */
  readonly sql: Sql;
  /** The queue to read. */
  readonly queue: string;
  /** Where messages go after their last attempt. */
  readonly deadLetterQueue: string;
  /** Seconds a read message stays hidden: longer than the handler may take. */
  readonly visibilitySeconds: number;
  /** Reads of a message before it is dead-lettered. */
  readonly maxAttempts: number;
  /** Messages handled at once. */
  readonly maxConcurrent: number;
  /** Handles one message; a throw is a failed attempt. `signal` aborts before the visibility ends. */
  readonly handle: (
    message: QueueMessage<Body>,
    signal: AbortSignal,
  ) => Promise<HandlerOutcome>;
  /** The domain's reaction to a dead letter, in the transaction that moves it. */
  readonly onDeadLetter: (
    tx: TransactionSql,
    body: Body,
    reason: string,
  ) => Promise<void>;
  /** Reports a failed attempt or a dead letter. @default {console.warn} */
  readonly log?: (line: string) => void;
}

/** A running queue worker. */
export interface QueueWorker {
  /** Stops reading, waits for the messages in hand, then resolves. */
  stop(): Promise<void>;
  /** Resolves once the worker has stopped. */
  readonly done: Promise<void>;
}

/** Longest backoff between two attempts, in seconds. */
const MAX_BACKOFF_SECONDS = 300;
/** How long one read waits for messages when the queue is empty. */
const POLL_SECONDS = 1;

/** Starts reading `options.queue`; see the module documentation for what happens to a message. */
export function startQueueWorker<Body>(
  options: QueueWorkerOptions<Body>,
): QueueWorker {
  const { sql, queue, visibilitySeconds, maxAttempts, maxConcurrent } = options;
  const log = options.log ?? ((line: string) => console.warn(line));
  const stopping = new AbortController();
  const inFlight = new Set<Promise<void>>();

  const settle = async (
    message: QueueMessage<Body>,
    outcome: HandlerOutcome,
  ) => {
    if (outcome.kind === "done") {
      await sql`select pgmq.delete(${queue}, ${message.msgId}::bigint)`;
      return;
    }
    log(
      `${queue}: message ${message.msgId} attempt ${message.readCount} failed: ${outcome.reason}`,
    );
    if (message.readCount >= maxAttempts) {
      await sql.begin(async (tx) => {
        const letter = {
          ...message.body,
          error: outcome.reason,
          attempts: message.readCount,
        };
        await tx`select pgmq.send(${options.deadLetterQueue}, ${tx.json(letter)}::jsonb)`;
        await tx`select pgmq.delete(${queue}, ${message.msgId}::bigint)`;
        await options.onDeadLetter(tx, message.body, outcome.reason);
      });
      log(
        `${queue}: message ${message.msgId} dead-lettered after ${message.readCount} attempts`,
      );
      return;
    }
    await sql`select pgmq.set_vt(${queue}, ${message.msgId}::bigint, ${outcome.delaySeconds}::integer)`;
  };

  const process = async (message: QueueMessage<Body>) => {
    // Give up a second before the message reappears, so no one else runs it meanwhile.
    const deadline = AbortSignal.timeout((visibilitySeconds - 1) * 1000);
    let outcome: HandlerOutcome;
    try {
      outcome = await options.handle(message, deadline);
    } catch (error) {
      const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      const delaySeconds = Math.min(
        2 ** (message.readCount - 1),
        MAX_BACKOFF_SECONDS,
      );
      outcome = { kind: "retry", delaySeconds, reason };
    }
    try {
      await settle(message, outcome);
    } catch (error) {
      // The message reappears when its visibility ends and is handled again.
      log(`${queue}: message ${message.msgId} not settled: ${String(error)}`);
    }
  };

  const loop = async () => {
    while (!stopping.signal.aborted) {
      const free = maxConcurrent - inFlight.size;
      if (free === 0) {
        await Promise.race(inFlight);
        continue;
      }
      let rows: { msg_id: number; read_ct: number; message: Body }[];
      try {
        rows = await sql<{ msg_id: number; read_ct: number; message: Body }[]>`
          select msg_id, read_ct, message
          from pgmq.read_with_poll(${queue}, ${visibilitySeconds}::integer, ${free}::integer,
            ${POLL_SECONDS}::integer, 50)
        `;
      } catch (error) {
        log(`${queue}: read failed, retrying: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      for (const row of rows) {
        const message = {
          msgId: Number(row.msg_id),
          readCount: row.read_ct,
          body: row.message,
        };
        const task: Promise<void> = process(message).finally(() => inFlight.delete(task));
        inFlight.add(task);
      }
    }
    await Promise.all(inFlight);
  };

  const done = loop();
  return {
    stop() {
      stopping.abort();
      return done;
    },
    done,
  };
}
