// Package metrics holds mcpmux's Prometheus metrics, on a registry of its
// own (not the client library's global one), and serves them in the
// Prometheus text format.
//
// Every label value comes from the configuration or from a fixed set
// (outcomes, states, rule kinds), never from what a client sent, so that
// the number of series stays bounded. All methods are safe on a nil
// *Metrics, which records nothing: code under test may run without one.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes of a tool call, the outcome label of mcpmux_tool_calls_total.
const (
	OutcomeOK          = "ok"          // the server answered with a result that is not isError
	OutcomeError       = "error"       // the server answered with an isError result
	OutcomeTimeout     = "timeout"     // the call ran over its timeout and was cancelled
	OutcomeCancelled   = "cancelled"   // the client cancelled the call
	OutcomeStopped     = "stopped"     // the server was stopped (shutdown, or removed by a reload) past the call's grace period
	OutcomeUnavailable = "unavailable" // the server was not running (or no longer configured)
	OutcomeLost        = "lost"        // the server went away during the call
	OutcomeRejected    = "rejected"    // the server answered with a JSON-RPC error
	OutcomeFailed      = "failed"      // any other failure of the upstream call
	OutcomeBadArgs     = "bad_arguments"
	OutcomeAtLimit     = "at_limit"     // a per-client server at max_clients had no connection for the caller
	OutcomeRefused     = "refused"      // refused before the call: blacklist or a rewrite rule
	OutcomeUnknown     = "unknown"      // no tool of that name (server and tool labels empty)
	OutcomeAmbiguous   = "ambiguous"    // several tools of that name (labels empty)
	OutcomeReplayed    = "replayed"     // answered from the replayed journal (replay in mcpmux.yaml)
	OutcomeNotRecorded = "not_recorded" // replay found no recorded answer, and miss: error answered it
)

// Kinds of rule hits, the kind label of mcpmux_rule_hits_total.
const (
	RuleRefused   = "refused"   // a rule refused a call
	RuleCorrected = "corrected" // a call was redirected to the tool it meant
	RuleFallback  = "fallback"  // a failed call was retried with a fallback tool
)

// Reload results, the result label of mcpmux_config_reloads_total.
const (
	ReloadApplied   = "applied"   // changes were applied
	ReloadUnchanged = "unchanged" // the new snapshot described what already ran
	ReloadInvalid   = "invalid"   // some file was invalid; its previous version (if any) kept running
	ReloadFailed    = "failed"    // a changed server did not come up; its previous version kept serving
)

// Options configure Metrics. The zero value has no server metrics.
type Options struct {
	// Servers, if set, is read at every scrape for the mcpmux_server_*
	// metrics: the servers live elsewhere (in the pool), which stays the
	// one place that knows them.
	Servers func() []Server
	// States are the states a server can be in. Every one is exported for
	// every server (1 for its current state, 0 for the others), so that a
	// query need not know which ones exist.
	States []string
}

// Metrics are the metrics of one mcpmux instance.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	inFlight *prometheus.GaugeVec
	sessions *prometheus.GaugeVec
	opened   *prometheus.CounterVec
	refused  prometheus.Counter
	reloads  *prometheus.CounterVec
	rules    *prometheus.CounterVec
	journal  prometheus.Counter
	cost     *prometheus.CounterVec
}

// callBuckets span what tool calls take: a local lookup in milliseconds to
// a browser task or code run near the 900 s default timeout.
var callBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900}

// New returns metrics registered on a new registry, with the Go runtime and
// process collectors.
func New(opts *Options) *Metrics {
	var o Options
	if opts != nil {
		o = *opts
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpmux_tool_calls_total",
			Help: "Tool calls by server, server's tool name and outcome. Calls answered without reaching a server (refused, unknown, ambiguous) are counted too.",
		}, []string{"server", "tool", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcpmux_tool_call_duration_seconds",
			Help:    "Duration of upstream tool calls by server, whatever their outcome.",
			Buckets: callBuckets,
		}, []string{"server"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcpmux_tool_calls_in_flight",
			Help: "Upstream tool calls running now, by server.",
		}, []string{"server"}),
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcpmux_client_sessions",
			Help: "Client sessions connected now, by profile (\"\" is the default profile).",
		}, []string{"profile"}),
		opened: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpmux_client_sessions_total",
			Help: "Client sessions initialized, by profile.",
		}, []string{"profile"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpmux_client_sessions_refused_total",
			Help: "HTTP client sessions refused (503) because max_sessions were open.",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpmux_config_reloads_total",
			Help: "Config reloads by result: applied, unchanged, invalid (a file was invalid and kept its previous version), failed (a changed server did not come up).",
		}, []string{"result"}),
		rules: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcpmux_rule_hits_total",
			Help: "Calls a rule acted on, by kind (refused, corrected, fallback) and rule name.",
		}, []string{"kind", "rule"}),
		journal: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mcpmux_journal_write_errors_total",
			Help: "Journal lines (journal in mcpmux.yaml) that could not be written: disk full, no permission, ... The calls themselves were answered.",
		}),
	}
	m.cost = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpmux_tool_cost_total",
		Help: "What the tool calls cost (cost: and tool_costs: of the server files), by server and currency. Calls answered from a replay cost nothing.",
	}, []string{"server", "currency"})
	m.reg.MustRegister(m.calls, m.latency, m.inFlight, m.sessions, m.opened, m.refused, m.reloads, m.rules, m.journal, m.cost,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.Servers != nil {
		m.reg.MustRegister(&serverCollector{servers: o.Servers, states: o.States})
	}
	return m
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Call is one running upstream call; Returned or Done ends it.
type Call struct {
	m            *Metrics
	server, tool string
	start        time.Time
}

// StartCall counts an upstream call of a server's tool as in flight until
// Returned or Done.
func (m *Metrics) StartCall(server, tool string) *Call {
	if m == nil {
		return nil
	}
	m.inFlight.WithLabelValues(server).Inc()
	return &Call{m: m, server: server, tool: tool, start: time.Now()}
}

// Done records the call's outcome and duration: Returned, then
// CallAnswered.
func (c *Call) Done(outcome string) {
	if c == nil {
		return
	}
	c.Returned()
	c.m.CallAnswered(c.server, c.tool, outcome)
}

// Returned ends the call when the server answered or the call failed: it
// is no longer in flight, and its duration is observed. Its outcome is
// counted apart, with CallAnswered: the aggregator counts every call's
// outcome in one place, whether a server was called or not.
func (c *Call) Returned() {
	if c == nil {
		return
	}
	c.m.inFlight.WithLabelValues(c.server).Dec()
	c.m.latency.WithLabelValues(c.server).Observe(time.Since(c.start).Seconds())
}

// CallAnswered records a call's outcome: of an upstream call that
// returned (see Returned), or of a call answered without one (refused,
// unknown, ambiguous, bad arguments). server and tool must name a
// configured tool or be empty: never pass a name the client made up.
func (m *Metrics) CallAnswered(server, tool, outcome string) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(server, tool, outcome).Inc()
}

// RuleHit records that a rule acted on a call: kind is RuleRefused,
// RuleCorrected or RuleFallback, rule the rule's name from the config (or a
// fixed name for built-in behaviour, e.g. "auto-correction").
func (m *Metrics) RuleHit(kind, rule string) {
	if m == nil {
		return
	}
	m.rules.WithLabelValues(kind, rule).Inc()
}

// JournalLineLost records a journal line that could not be written.
func (m *Metrics) JournalLineLost() {
	if m == nil {
		return
	}
	m.journal.Inc()
}

// Charged adds the price of a call of a server's tool.
func (m *Metrics) Charged(server, currency string, amount float64) {
	if m == nil {
		return
	}
	m.cost.WithLabelValues(server, currency).Add(amount)
}

// Reload records a config reload's result (ReloadApplied, ...).
func (m *Metrics) Reload(result string) {
	if m == nil {
		return
	}
	m.reloads.WithLabelValues(result).Inc()
}

// SessionStarted counts a client session of a profile as connected; the
// returned function counts it as gone.
func (m *Metrics) SessionStarted(profile string) (ended func()) {
	if m == nil {
		return func() {}
	}
	m.opened.WithLabelValues(profile).Inc()
	g := m.sessions.WithLabelValues(profile)
	g.Inc()
	return g.Dec
}

// SessionRefused counts an HTTP client session refused at max_sessions.
func (m *Metrics) SessionRefused() {
	if m == nil {
		return
	}
	m.refused.Inc()
}
