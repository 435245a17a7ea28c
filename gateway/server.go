// Package gateway is Lethe's HTTP front: it speaks the Azure Cosmos DB REST
// protocol (see shared/PROTOCOL.md) and turns each request into one engine call.
// It decodes paths, x-ms-* headers and bodies, checks the master-key signature,
// and encodes results and Cosmos-shaped JSON errors. Business rules live in the
// engine, never here.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"github.com/lethe-db/lethe/console"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lethe-db/lethe/clock"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/metrics"
)

// ManualClock is a clock moved only by hand (lethe serve --clock=manual).
type ManualClock interface {
	// Now returns the clock's time.
	Now() time.Time
	// Advance moves it forward by d; Set moves it to t. Neither goes back:
	// they return an error wrapping clock.ErrBackwards instead.
	Advance(d time.Duration) (time.Time, error)
	Set(t time.Time) (time.Time, error)
}

// Options configure a Server. Zero fields take their defaults.
type Options struct {
	// Engine serves every request. Required.
	Engine *engine.Engine
	// Key is the base64-decoded master key requests must be signed with. Required.
	Key []byte
	// Consistency is the account's default consistency level, as advertised by
	// GET /. The default is "Session".
	Consistency string
	// Logger receives request errors and server events. The default discards them.
	Logger *slog.Logger
	// Now is the wall clock that request dates (x-ms-date) are checked against,
	// within 15 minutes. The default is time.Now. It must stay the wall clock
	// even when the engine runs on ManualClock: clients sign with their own
	// wall-clock time.
	Now func() time.Time
	// ManualClock, when set, is the clock the engine runs on (its Options.Now
	// must be ManualClock.Now), and turns on the admin API that moves it and
	// runs the purge: /_lethe/clock and /_lethe/purge (see admin.go). When nil
	// those paths answer 404. A *clock.Manual, or an
	// *engine.SharedManualClock for gateways sharing a store.
	ManualClock ManualClock
	// AdvertiseEndpoint is the URL that GET / advertises to SDKs as the
	// account's only region, where they send every later request (the Cosmos
	// account's regional endpoint). Empty means the scheme and Host of each
	// request, so that clients keep using the address they were given; set it
	// when clients must be sent elsewhere (the Cosmos emulator advertises
	// https://127.0.0.1:8081/ whatever name it was reached by). It ends in '/'.
	AdvertiseEndpoint string
	// Metrics, when set, records every request and is served at GET /metrics
	// without authentication. Nil means neither.
	Metrics *metrics.Metrics
}

// Server is the HTTP server of the Cosmos DB REST API.
type Server struct {
	opts    Options
	log     *slog.Logger
	http    *http.Server
	console http.Handler // the web console's pages, at console.Prefix
	routes  routeTable   // handlers by resource and method
}

// New returns a server for opts. Serve it with Serve or ServeTLS.
func New(opts Options) *Server {
	if m, ok := opts.ManualClock.(*clock.Manual); ok && m == nil {
		opts.ManualClock = nil // a nil *clock.Manual is no manual clock
	}
	if opts.Consistency == "" {
		opts.Consistency = "Session"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, log: opts.Logger, console: console.Handler()}
	s.buildRoutes()
	s.http = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve accepts plain HTTP connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ServeTLS accepts HTTPS connections on ln with the given certificate until Shutdown.
func (s *Server) ServeTLS(ln net.Listener, cert tls.Certificate) error {
	s.http.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	err := s.http.ServeTLS(ln, "", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for in-flight requests to
// finish, or for ctx to end.
func (s *Server) Shutdown(ctx context.Context) error { return s.http.Shutdown(ctx) }

// Close closes the listeners and every connection at once, abandoning the
// requests in flight: for a shutdown whose time is up.
func (s *Server) Close() error { return s.http.Close() }
