package tracing

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// Config is the tracing key of mcpmux.yaml. What it leaves unset comes
// from the standard OpenTelemetry variables (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, …_HEADERS, …_PROTOCOL,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES), which the exporters read
// themselves.
type Config struct {
	// Enabled turns tracing on; unset means on when the tracing key is
	// present. Without the key, OTEL_TRACES_EXPORTER=otlp turns it on.
	Enabled *bool `koanf:"enabled"`
	// Endpoint is the collector's URL, e.g. http://localhost:4318 for
	// OTLP/HTTP (the path /v1/traces is added) or http://localhost:4317
	// for gRPC; http:// sends without TLS.
	Endpoint string `koanf:"endpoint"`
	// Protocol is http/protobuf (the default) or grpc.
	Protocol string `koanf:"protocol"`
	// Headers are sent with every export, e.g. an API key.
	Headers map[string]string `koanf:"headers"`
	// SampleRatio is the share of new traces recorded, 0 to 1; unset
	// means 1. A client's sampled parent is always followed.
	SampleRatio *float64 `koanf:"sample_ratio"`
	// ServiceName is service.name; default OTEL_SERVICE_NAME, else mcpmux.
	ServiceName string `koanf:"service_name"`
}

// Protocols of the exporter.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Validate reports the first problem of c, naming its field.
func (c *Config) Validate() (field string, err error) {
	if c == nil {
		return "", nil
	}
	switch c.Protocol {
	case "", ProtocolHTTP, ProtocolGRPC:
	default:
		return "protocol", fmt.Errorf("%q is not a protocol (%s or %s)", c.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "endpoint", fmt.Errorf("%q is not an http:// or https:// URL of the collector (e.g. http://localhost:4318)", c.Endpoint)
		}
	}
	if r := c.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		return "sample_ratio", fmt.Errorf("%v is not between 0 and 1", *r)
	}
	return "", nil
}

// On reports whether c (nil: no tracing key) turns tracing on, given the
// environment getenv reads.
func (c *Config) On(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	if c == nil {
		return getenv("OTEL_TRACES_EXPORTER") == "otlp"
	}
	return c.Enabled == nil || *c.Enabled
}

// New builds the provider c describes, nil when c does not turn tracing
// on. Nothing is dialled yet: the exporter connects when it first sends.
func New(ctx context.Context, c *Config) (*Provider, error) {
	if !c.On(os.Getenv) {
		return nil, nil
	}
	if c == nil {
		c = &Config{}
	}
	if field, err := c.Validate(); err != nil {
		return nil, fmt.Errorf("tracing.%s: %w", field, err)
	}
	protocol := c.Protocol
	if protocol == "" {
		protocol = firstEnv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	where := c.Endpoint
	if where == "" {
		where = firstEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	switch protocol {
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		if c.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
		if where == "" {
			where = "localhost:4317"
		}
	case "", ProtocolHTTP:
		protocol = ProtocolHTTP
		var opts []otlptracehttp.Option
		if c.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.Endpoint, "/")+"/v1/traces"))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
		if where == "" {
			where = "localhost:4318"
		}
	default:
		return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported (%s or %s)", protocol, ProtocolHTTP, ProtocolGRPC)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("mcpmux")),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	if c.ServiceName != "" {
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName(c.ServiceName)))
	}
	ratio := 1.0
	if c.SampleRatio != nil {
		ratio = *c.SampleRatio
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
	)
	return newProvider(tp, fmt.Sprintf("OTLP %s to %s, sample ratio %v", protocol, where, ratio)), nil
}

// NewWith builds a provider on exporter exp, sampling every trace: for
// tests, which read the spans back from an in-memory exporter.
func NewWith(exp sdktrace.SpanExporter) *Provider {
	return newProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), "test exporter")
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}
