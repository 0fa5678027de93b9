package server

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/prism-local/prism/engine"
)

// Metrics are the server's Prometheus metrics, in a registry of their own
// (no global state). Create them with NewMetrics and pass them in
// Config.Metrics so the main's loader can report load times.
type Metrics struct {
	reg        *prometheus.Registry
	requests   *prometheus.CounterVec
	prompt     prometheus.Counter
	completion prometheus.Counter
	cached     prometheus.Counter
	ttft       prometheus.Histogram
	interToken prometheus.Histogram
	load       prometheus.Histogram
}

// NewMetrics returns the metrics, registered with the Go and process
// collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "prism_http_requests_total",
			Help: "HTTP requests answered, by route and status."}, []string{"endpoint", "status"}),
		prompt:     prometheus.NewCounter(prometheus.CounterOpts{Name: "prism_prompt_tokens_total", Help: "Prompt tokens of the generations."}),
		completion: prometheus.NewCounter(prometheus.CounterOpts{Name: "prism_completion_tokens_total", Help: "Tokens generated."}),
		cached:     prometheus.NewCounter(prometheus.CounterOpts{Name: "prism_cached_tokens_total", Help: "Prompt tokens reused from the engine's cache."}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "prism_time_to_first_token_seconds",
			Help: "From the generation's start (queueing included) to its first token.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}),
		interToken: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "prism_inter_token_seconds",
			Help: "Mean time between tokens of each generation (one observation per generation).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		load: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "prism_model_load_seconds",
			Help: "Model load time.", Buckets: prometheus.ExponentialBuckets(0.1, 2, 10)}),
	}
	m.reg.MustRegister(m.requests, m.prompt, m.completion, m.cached, m.ttft, m.interToken, m.load,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveLoad records one model load.
func (m *Metrics) ObserveLoad(d time.Duration) { m.load.Observe(d.Seconds()) }

// observe records a finished generation.
func (m *Metrics) observe(res engine.Result) {
	m.prompt.Add(float64(res.Usage.PromptTokens))
	m.completion.Add(float64(res.Usage.CompletionTokens))
	m.cached.Add(float64(res.Usage.CachedTokens))
	if res.Usage.CompletionTokens > 0 {
		m.ttft.Observe(res.Timings.TimeToFirstToken.Seconds())
	}
	if res.Timings.TokensPerSecond > 0 {
		m.interToken.Observe(1 / res.Timings.TokensPerSecond)
	}
}

// managerCollector reports the Manager's state at scrape time.
type managerCollector struct {
	mgr                                   *engine.Manager
	queue, maxQueue, busy, streams, model *prometheus.Desc
	name                                  func(key string) string
}

func (c *managerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.queue
	ch <- c.maxQueue
	ch <- c.busy
	ch <- c.streams
	ch <- c.model
}

func (c *managerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.mgr.Stats()
	ch <- prometheus.MustNewConstMetric(c.queue, prometheus.GaugeValue, float64(st.Waiting))
	ch <- prometheus.MustNewConstMetric(c.maxQueue, prometheus.GaugeValue, float64(st.MaxQueue))
	busy := 0.0
	if st.InUse {
		busy = 1
	}
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, busy)
	ch <- prometheus.MustNewConstMetric(c.streams, prometheus.GaugeValue, float64(st.Leases))
	if st.ActiveModel != "" {
		ch <- prometheus.MustNewConstMetric(c.model, prometheus.GaugeValue, 1, c.name(st.ActiveModel), st.Device)
	}
}

func (s *Server) registerManager() {
	s.metrics.reg.MustRegister(&managerCollector{
		mgr:      s.cfg.Manager,
		queue:    prometheus.NewDesc("prism_queue_depth", "Requests waiting for the model.", nil, nil),
		maxQueue: prometheus.NewDesc("prism_queue_max", "The queue bound (-max-queue).", nil, nil),
		busy:     prometheus.NewDesc("prism_engine_busy", "1 while the engine lock is held.", nil, nil),
		streams:  prometheus.NewDesc("prism_engine_streams", "Streams running on the resident model (up to its max batch).", nil, nil),
		model:    prometheus.NewDesc("prism_model_resident", "The resident model and the device it really runs on.", []string{"model", "device"}, nil),
		name:     s.modelName,
	})
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{})
}

// statusRecorder keeps the status a handler wrote, for the request counter.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush (event streams).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (m *Metrics) count(r *http.Request, status int) {
	endpoint := r.Pattern
	if endpoint == "" || endpoint == "/" {
		endpoint = "other" // unknown paths do not make a label each
	}
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(endpoint, strconv.Itoa(status)).Inc()
}
