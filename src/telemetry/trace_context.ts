/**
 * W3C Trace Context (`traceparent`) for runs: the producer writes the active span's context on
 * the run it starts, and each attempt's span takes it as its parent. Written and read here rather
 * than through the API's global propagator, which an application may not have registered (Deno's
 * built-in SDK registers none for `propagation.inject`).
 *
 * @module
 */

import { type Context, ROOT_CONTEXT, type SpanContext, trace } from "./otel_api.ts";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The `traceparent` of the active span in `active`, or `null` when it has no valid one. */
export function traceparentOf(active: Context): string | null {
  const span = trace.getSpanContext(active);
  if (span === undefined || !trace.isSpanContextValid(span)) return null;
  return `00-${span.traceId}-${span.spanId}-${
    (span.traceFlags & 0xff).toString(16).padStart(2, "0")
  }`;
}

/** A context whose remote parent is `traceparent`; the root context for `null` or a bad value. */
export function contextOf(traceparent: string | null | undefined): Context {
  const match = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (match === null) return ROOT_CONTEXT;
  const span: SpanContext = {
    traceId: match[1],
    spanId: match[2],
    traceFlags: parseInt(match[3], 16),
    isRemote: true,
  };
  return trace.isSpanContextValid(span) ? trace.setSpanContext(ROOT_CONTEXT, span) : ROOT_CONTEXT;
}
