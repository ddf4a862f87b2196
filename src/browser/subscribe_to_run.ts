/**
 * `subscribeToRun()`: a run's live events over Supabase Realtime, for browsers and Edge
 * Functions.
 *
 * @module
 */

import type { SupabaseClient } from "@supabase/supabase-js";
import type { DeployableFlow } from "../dsl/types.ts";
import { assertUuid } from "../dsl/uuid.ts";
import {
  type RunEvent,
  type RunEventPayload,
  type RunHandle,
  runTopic,
} from "../events/run_event.ts";
import { RunEventFeed } from "../events/run_event_feed.ts";
import { type RpcName, rpcOf } from "./_rpc.ts";

/**
 * Options of {@linkcode subscribeToRun}.
 *
 * @typeParam F The run's flow type (`never`: untyped events).
 *
 * @example Usage
 * ```ts
 * import type { SubscribeToRunOptions } from "@sluice/sluice/browser";
 *
 * const options: SubscribeToRunOptions = { replayRpc: { schema: "public", name: "report_events" } };
 * ```
 */
export interface SubscribeToRunOptions<F extends DeployableFlow = never> {
  /** The run's flow: types the events (only its type is used). */
  readonly flow?: F;
  /** Ends the iteration: the next step of the iterator rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * The function that replays the run's state, taking `(run_id uuid)` and returning its events:
   * sluice's `sluice.read_run_events`, or an application's wrapper around it (docs/events.md).
   *
   * @default {{ schema: "sluice", name: "read_run_events" }}
   */
  readonly replayRpc?: RpcName;
}

/**
 * Subscribes to a run's Realtime topic (`sluice:run:<run id>`, private) and yields its events,
 * typed by its flow, ending after the terminal one: the same events, in the same order, as
 * `watchRun()` on a server. The run's state is replayed first (through `replayRpc`), and again
 * each time the channel is (re)joined, so a late or reconnected subscriber misses nothing and
 * sees nothing twice. Receiving needs a Realtime authorization policy that admits the user to
 * the topic (docs/events.md); when Realtime refuses the first join, the iteration rejects with
 * its error. Leaves the channel when the iteration ends, also on `break`.
 *
 * @typeParam F The run's flow type.
 * @param supabase A supabase-js client (signed in as the user whose policies apply).
 * @param run The run id, or a `RunHandle` that also types the events.
 * @param options The flow (for typing), a signal, and the replay RPC.
 * @returns The events.
 * @throws {TypeError} When the run id is not a UUID.
 * @throws {RangeError} From the iteration, when the replay finds no such run.
 *
 * @example Usage
 * ```ts ignore
 * import { createClient } from "npm:@supabase/supabase-js@2";
 * import { startRun, subscribeToRun } from "@sluice/sluice/browser";
 *
 * const supabase = createClient("https://project.supabase.co", "anon-key");
 * const runId = await startRun(supabase, "report", { month: "2026-11" });
 * for await (const event of subscribeToRun(supabase, runId)) console.log(event.type);
 * ```
 */
export function subscribeToRun<F extends DeployableFlow = never>(
  supabase: SupabaseClient,
  run: string | RunHandle<F>,
  options: SubscribeToRunOptions<F> = {},
): AsyncGenerator<RunEvent<F>, void, undefined> {
  const runId = typeof run === "string" ? run : run?.runId;
  assertUuid(runId, "Cannot subscribe to run");
  return subscribe(supabase, runId, options) as AsyncGenerator<RunEvent<F>, void, undefined>;
}

async function* subscribe(
  supabase: SupabaseClient,
  runId: string,
  options: SubscribeToRunOptions<DeployableFlow>,
): AsyncGenerator<RunEventPayload, void, undefined> {
  const replay = rpcOf(supabase, options.replayRpc, "read_run_events");
  const feed = new RunEventFeed(runId, async () => {
    const { data, error } = await replay({ run_id: runId });
    if (error !== null) {
      throw new Error(`Cannot subscribe to run ${runId}: ${error.message}`, { cause: error });
    }
    return data as RunEventPayload[] | null;
  });
  let joined = false;
  const channel = supabase
    .channel(runTopic(runId), { config: { private: true } })
    .on("broadcast", { event: "*" }, (message) => feed.push(message.payload as RunEventPayload))
    .subscribe((status, error) => {
      // Joined (again): what was broadcast before is not replayed by Realtime, so read it.
      if (status === "SUBSCRIBED") {
        joined = true;
        feed.resync();
      }
      // A refused first join (no authorization policy admits the user) is final; errors after
      // a join are a lost connection, which supabase-js rejoins by itself.
      if (status === "CHANNEL_ERROR" && !joined) feed.fail(error);
      // Until the rejoin's resync, broadcasts wait so that none goes ahead of the state it follows.
      else if (status !== "SUBSCRIBED") feed.interrupt();
    });
  try {
    yield* feed.events(options.signal);
  } finally {
    await supabase.removeChannel(channel);
  }
}
