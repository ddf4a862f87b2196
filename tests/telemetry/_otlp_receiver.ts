// A real OTLP/HTTP receiver for tests: an HTTP server that accepts what an OTLP exporter posts
// as JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json) on /v1/traces, /v1/metrics and /v1/logs, and
// decodes the spans and metric points out of it.

/** An OTLP attribute value as the JSON encoding writes it. */
export interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
}

/** A span as received, with its attributes flattened. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly status: { code?: number; message?: string };
  readonly attributes: Record<string, unknown>;
  readonly events: { name: string; attributes: Record<string, unknown> }[];
  readonly service: unknown;
}

/** One data point of a metric, from the last export that carried it. */
export interface ReceivedPoint {
  readonly metric: string;
  readonly attributes: Record<string, unknown>;
  /** A sum's value, or a histogram's count. */
  readonly value: number;
}

interface KeyValue {
  key: string;
  value: AnyValue;
}

function flatten(attributes: KeyValue[] | undefined): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  for (const { key, value } of attributes ?? []) {
    flat[key] = value.stringValue ??
      (value.intValue !== undefined
        ? Number(value.intValue)
        : value.doubleValue ?? value.boolValue);
  }
  return flat;
}

/** A running receiver; disposing it shuts the server down. */
export interface OtlpReceiver extends AsyncDisposable {
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  readonly endpoint: string;
  /** Every request received, by path. */
  readonly requests: string[];
  readonly spans: ReceivedSpan[];
  /** The points of the latest export per metric and attribute set (cumulative temporality). */
  points(): ReceivedPoint[];
}

/** Starts a receiver on a free port of 127.0.0.1. */
export function startOtlpReceiver(): OtlpReceiver {
  const requests: string[] = [];
  const spans: ReceivedSpan[] = [];
  const latest = new Map<string, ReceivedPoint>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    requests.push(path);
    const type = request.headers.get("content-type") ?? "";
    if (!type.startsWith("application/json")) {
      return new Response(`expected OTLP JSON, got ${type}`, { status: 415 });
    }
    const body = await request.json();
    if (path === "/v1/traces") {
      for (const resource of body.resourceSpans ?? []) {
        const service = flatten(resource.resource?.attributes)["service.name"];
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            spans.push({
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId ?? "",
              name: span.name,
              kind: span.kind,
              status: span.status ?? {},
              attributes: flatten(span.attributes),
              events: (span.events ?? []).map((
                event: { name: string; attributes?: KeyValue[] },
              ) => ({
                name: event.name,
                attributes: flatten(event.attributes),
              })),
              service,
            });
          }
        }
      }
    } else if (path === "/v1/metrics") {
      for (const resource of body.resourceMetrics ?? []) {
        for (const scope of resource.scopeMetrics ?? []) {
          for (const metric of scope.metrics ?? []) {
            const points = metric.sum?.dataPoints ?? metric.histogram?.dataPoints ?? [];
            for (const point of points) {
              const attributes = flatten(point.attributes);
              const value = metric.histogram
                ? Number(point.count)
                : Number(point.asInt ?? point.asDouble);
              const key = `${metric.name} ${JSON.stringify(Object.entries(attributes).sort())}`;
              latest.set(key, { metric: metric.name, attributes, value });
            }
          }
        }
      }
    }
    return Response.json({});
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    requests,
    spans,
    points: () => [...latest.values()],
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
