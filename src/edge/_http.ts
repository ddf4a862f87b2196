/**
 * The HTTP face of a worker function: authorizes a request with the bearer secret and answers the
 * host's status as JSON, with the status code of its state.
 *
 * @module
 */

import type { BearerAuth } from "./bearer_auth.ts";
import { noSecretMessage } from "./_host_config.ts";
import type { WorkerFunctionState, WorkerFunctionStatus } from "./edge_options.ts";

const HTTP_STATUS: Readonly<Record<WorkerFunctionState, number>> = {
  idle: 200,
  starting: 202,
  running: 200,
  draining: 503,
  paused: 503,
  disabled: 503,
  stopped: 503,
  failed: 500,
};

/**
 * Answers one request: 500 without a configured secret, 401 without the secret, otherwise what
 * `start()` (called only for an authorized request) reports.
 */
export async function answerRequest(
  request: Request,
  functionName: string,
  auth: BearerAuth | null,
  start: () => Promise<WorkerFunctionStatus>,
): Promise<Response> {
  // The body carries nothing the worker needs; release it at once.
  await request.body?.cancel().catch(() => {});
  if (auth === null) {
    return json(500, { error: noSecretMessage(functionName) });
  }
  if (!(await auth.verify(request.headers.get("authorization")))) {
    return json(401, { error: "Unauthorized: send Authorization: Bearer <secret>" }, {
      "www-authenticate": 'Bearer realm="sluice"',
    });
  }
  const status = await start();
  return json(HTTP_STATUS[status.status], status);
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
