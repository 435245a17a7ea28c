package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeHTTP is a server whose requests all finish at once.
type fakeHTTP struct{ closed bool }

func (f *fakeHTTP) Shutdown(context.Context) error { return nil }
func (f *fakeHTTP) Close() error                   { f.closed = true; return nil }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuf) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }
func (b *syncBuf) String() string              { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// TestShutdownIsBounded: a store that never closes (a sync stalled on a
// failing disk) does not keep the server from stopping: shutdown returns
// once its time is up, and says what that means for the data.
func TestShutdownIsBounded(t *testing.T) {
	var logs syncBuf
	log := slog.New(slog.NewTextHandler(&logs, nil))
	errc := make(chan error, 1)
	errc <- nil // the listener has stopped
	stuck := make(chan struct{})
	defer close(stuck)
	returned := make(chan struct{})
	go func() {
		shutdown(&fakeHTTP{}, errc, func() { <-stuck }, 50*time.Millisecond, log)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("shutdown waited for a store that never closes")
	}
	if !strings.Contains(logs.String(), "the store did not close in time") {
		t.Errorf("the log does not say the store was left unclosed:\n%s", logs.String())
	}
}

// TestShutdownWaitsForTheStore: a store that closes in time is closed before
// shutdown returns.
func TestShutdownWaitsForTheStore(t *testing.T) {
	var logs syncBuf
	errc := make(chan error, 1)
	errc <- nil
	closed := false
	shutdown(&fakeHTTP{}, errc, func() { closed = true }, 30*time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
	if !closed || !strings.Contains(logs.String(), "stopped") {
		t.Errorf("closed %v, log:\n%s", closed, logs.String())
	}
}
