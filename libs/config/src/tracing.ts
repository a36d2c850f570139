import { type DynamicModule, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { ConfigError, type EnvReader } from './env-reader';

/**
 * OpenTelemetry traces of an app (the coordinator, the reference worker), from the standard `OTEL_*` variables.
 * Off unless asked for; when off, no SDK is loaded (the spans the code makes through the OpenTelemetry API are
 * non-recording, at the cost of a function call).
 */
export interface TracingSettings {
  /** Spans are exported: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint set; never with OTEL_SDK_DISABLED=true. */
  enabled: boolean;
  /** OTEL_SERVICE_NAME: the `service.name` of every span. */
  serviceName: string;
  /** Where spans go, OTLP/HTTP (JSON): OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  endpoint: string;
  /** OTEL_EXPORTER_OTLP_TRACES_HEADERS, else OTEL_EXPORTER_OTLP_HEADERS: `key=value` pairs sent with every export. */
  headers: Record<string, string>;
  /** OTEL_BSP_SCHEDULE_DELAY: finished spans are exported in batches this often. */
  exportDelayMs: number;
}

const DEFAULT_ENDPOINT = 'http://localhost:4318';

/** Reads the tracing settings (see TracingSettings); `serviceName` is the app's own when OTEL_SERVICE_NAME is unset. */
export function readTracing(read: EnvReader, serviceName: string): TracingSettings {
  const exporter = read.optionalString('OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    throw new ConfigError(`OTEL_TRACES_EXPORTER must be otlp or none (traces are exported as OTLP/HTTP), got "${exporter}"`);
  }
  const tracesEndpoint = read.optionalString('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const baseEndpoint = read.optionalString('OTEL_EXPORTER_OTLP_ENDPOINT');
  const protocol = read.optionalString('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? read.optionalString('OTEL_EXPORTER_OTLP_PROTOCOL');
  const enabled =
    !read.boolean('OTEL_SDK_DISABLED', false) && (exporter === 'otlp' || (exporter === undefined && (tracesEndpoint ?? baseEndpoint) !== undefined));
  if (enabled && protocol !== undefined && protocol !== 'http/json') {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/json (traces are exported as OTLP/HTTP with JSON), got "${protocol}"`);
  }
  const endpoint = tracesEndpoint
    ? read.url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http', 'https'])
    : `${read.url('OTEL_EXPORTER_OTLP_ENDPOINT', ['http', 'https'], DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const headersVariable = read.optionalString('OTEL_EXPORTER_OTLP_TRACES_HEADERS') ? 'OTEL_EXPORTER_OTLP_TRACES_HEADERS' : 'OTEL_EXPORTER_OTLP_HEADERS';
  return {
    enabled,
    serviceName: read.string('OTEL_SERVICE_NAME', serviceName),
    endpoint,
    headers: Object.fromEntries(read.listOf(headersVariable, parseHeader)),
    exportDelayMs: read.integer('OTEL_BSP_SCHEDULE_DELAY', 5_000, 1, 3_600_000),
  };
}

/** One `key=value` of an OTLP headers list (the value percent-encoded, as the OpenTelemetry specification says). */
function parseHeader(item: string): [string, string] {
  const at = item.indexOf('=');
  if (at <= 0) throw new Error('each header must be key=value');
  return [item.slice(0, at).trim(), decodeURIComponent(item.slice(at + 1).trim())];
}

/** What startTracing started: flushed and stopped when the app shuts down. */
interface StartedTracing {
  shutdown(): Promise<void>;
}

/**
 * Registers an OpenTelemetry SDK as the process's tracer provider, exporting to the OTLP/HTTP endpoint of
 * `settings`, with W3C Trace Context propagation and AsyncLocalStorage for the active span. The SDK's packages are
 * loaded here, and only here: an app with tracing off never loads them.
 */
async function startTracing(settings: TracingSettings): Promise<StartedTracing> {
  const [api, { TracerProvider, BatchSpanProcessor }, { OTLPTraceExporter }, { resourceFromAttributes }, { AsyncLocalStorageContextManager }, core] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/core'),
    ]);
  const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: settings.headers });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: settings.exportDelayMs })],
  });
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  if (!api.trace.setGlobalTracerProvider(provider)) throw new ConfigError('an OpenTelemetry tracer provider is registered in this process already');
  new Logger('Tracing').log(`exporting traces as ${settings.serviceName} to ${settings.endpoint}`);
  return provider;
}

const TRACING = Symbol('TRACING');

/** Flushes the spans still buffered when the app shuts down (finished runs' last spans included). */
class TracingShutdown implements OnApplicationShutdown {
  constructor(@Inject(TRACING) private readonly tracing: StartedTracing | undefined) {}

  async onApplicationShutdown(): Promise<void> {
    await this.tracing?.shutdown();
  }
}

/** Starts tracing when `settings` enable it (see startTracing), and stops it with the app. */
@Module({})
export class TracingModule {
  static forRoot(settings: TracingSettings): DynamicModule {
    return {
      module: TracingModule,
      providers: [{ provide: TRACING, useFactory: () => (settings.enabled ? startTracing(settings) : undefined) }, TracingShutdown],
    };
  }
}
