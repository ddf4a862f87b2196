/**
 * `deno task sluice signals send <key> <signal_id> [--payload JSON]`: sends a signal
 * (`sendSignal`, docs/waits.md#signals) and says what it released, or why it released nothing.
 *
 * @module
 */

import { SignalIdConflictError } from "../../client/errors.ts";
import { sendSignal } from "../../client/send_signal.ts";
import { formatIsoTime } from "../../dashboard/format.ts";
import { listSignals } from "../../db/ops_queries.ts";
import { type OpsCommand, optionString, printJson } from "./command_types.ts";

/**
 * The `signals send` command. Exits 0 when the signal was sent now or was a duplicate, 2 for a
 * `--payload` that is not JSON, 1 when the signal id was sent before with another key.
 *
 * @example Usage
 * ```ts ignore
 * import { signalsSendCommand } from "./signals_send.ts";
 *
 * await signalsSendCommand.run(sql, {
 *   positional: ["refund:r_42", "decision-r_42"],
 *   json: false,
 *   options: { payload: '{"approved": true}' },
 * }, io);
 * ```
 */
export const signalsSendCommand: OpsCommand = {
  name: "signals send",
  positional: ["key", "signal_id"],
  options: [{
    name: "payload",
    value: "JSON",
    summary: "the waiting steps' output (default: null)",
  }],
  json: true,
  summary: "send a signal: the steps waiting on its key complete with the payload",
  description:
    "Calls sluice.send_signal: every step waiting on KEY completes with the payload and its\n" +
    "dependents start, in one transaction. A signal no step waits on yet is kept 7 days for a\n" +
    "wait of a run started before it. Sending the same signal id again changes nothing; the\n" +
    "same id with another key is refused.",
  async run(sql, args, io) {
    const [key, signalId] = args.positional;
    let payload: unknown;
    try {
      payload = JSON.parse(optionString(args, "payload", "null"));
    } catch (error) {
      io.err(
        `Cannot send signal ${JSON.stringify(signalId)}: --payload is not JSON: ${
          (error as Error).message
        }`,
      );
      return 2;
    }
    try {
      const result = await sendSignal(sql, { key, payload, signalId });
      if (args.json) {
        printJson(io, [result]);
      } else if (result.outcome === "duplicate") {
        io.out(`Signal ${JSON.stringify(signalId)} was sent before; nothing changed.`);
      } else if (result.released > 0) {
        io.out(
          `Sent signal ${JSON.stringify(signalId)}: released ${result.released} ${
            result.released === 1 ? "step" : "steps"
          } waiting on ${JSON.stringify(key)}.`,
        );
      } else {
        const [kept] = await listSignals(sql, { key, runId: null, state: null, limit: 1 });
        io.out(
          `Sent signal ${JSON.stringify(signalId)}: no step waits on ${JSON.stringify(key)} now; ` +
            `kept until ${formatIsoTime(kept?.expires_at ?? null)} for a wait of a run started ` +
            `before it (\`signals list --key\` shows it).`,
        );
      }
      return 0;
    } catch (error) {
      if (!(error instanceof SignalIdConflictError)) throw error;
      io.err(error.message);
      return 1;
    }
  },
};
