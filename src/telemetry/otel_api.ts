/**
 * The one import of `npm:@opentelemetry/api`: sluice writes to the OpenTelemetry API and exports
 * nothing itself; whatever SDK the application registers (Deno's built-in one under
 * `OTEL_DENO=true`, or `@opentelemetry/sdk-*`) exports, and with none the API is a no-op.
 *
 * @module
 */

export {
  type Context,
  context,
  type Counter,
  type Histogram,
  metrics,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Tracer,
} from "npm:@opentelemetry/api@1.9.0";
