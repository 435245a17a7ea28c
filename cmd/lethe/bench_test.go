package main

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe/bench"
)

func TestParseBenchFlags(t *testing.T) {
	t.Setenv("LETHE_STORE", "") // a shared store for several gateways comes from --serve-args here
	c, err := parseBenchFlags([]string{"--spawn", "--serve-args", "--data-dir /tmp/x", "--workload", "create, read,query-pk", "--warmup", "0", "--ceiling", "--json", "out.json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := c.opts
	if !o.Spawn || !o.Ceiling || c.jsonPath != "out.json" || o.Warmup >= 0 {
		t.Errorf("parsed %+v", c)
	}
	if want := []string{"--data-dir", "/tmp/x"}; !slices.Equal(o.ServeArgs, want) {
		t.Errorf("serve args %q, want %q", o.ServeArgs, want)
	}
	if want := []string{"create", "read", "query-pk"}; !slices.Equal(o.Workloads, want) {
		t.Errorf("workloads %q, want %q", o.Workloads, want)
	}
	if o.Rounds != 1 {
		t.Errorf("rounds %d, want 1 by default", o.Rounds)
	}
	if c, err := parseBenchFlags([]string{"--spawn", "--workload", "ttl-sustained", "--rounds", "3"}, io.Discard); err != nil || c.opts.Rounds != 3 {
		t.Errorf("--rounds 3: %v, %v", c, err)
	}
	if _, err := parseBenchFlags([]string{"--spawn", "--gateways", "2", "--serve-args", "--store postgres://h/db", "--workload", "ttl-sustained"}, io.Discard); err != nil {
		t.Errorf("ttl-sustained on two gateways: %v", err)
	}
	if o.Docs != bench.DefaultDocs || o.Concurrency != bench.DefaultConcurrency || o.Duration != 10*time.Second || o.DocSize != 1024 || o.Partitions != 100 || o.Keys != "uniform" {
		t.Errorf("defaults: %+v", o)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "scan"}, `"scan"`},
		{[]string{"--keys", "pareto"}, "pareto"},
		{[]string{"--ops", "10", "--duration", "1s"}, "--ops and --duration"},
		{[]string{"--spawn", "--endpoint", "http://x/"}, "--endpoint and --spawn"},
		{[]string{"--serve-args", "--in-memory"}, "serve-args needs spawn"},
		{[]string{"--addr", ":1"}, "--addr goes with --serve-ceiling"},
		{[]string{"--ceiling-work", "20us"}, "--ceiling-work goes with --serve-ceiling"},
		{[]string{"--serve-ceiling", "--ceiling-work", "-1us"}, "--ceiling-work goes with --serve-ceiling"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--timeline-interval", "1500ms"}, "timeline interval"},
		{[]string{"--spawn", "--data-dir-size", "/tmp/x"}, "data-dir-size"},
		{[]string{"--rounds", "-1"}, "rounds must be positive"},
		{[]string{"--gateways", "2"}, "--gateways needs --spawn"},
		{[]string{"--gateways", "1"}, "--gateways needs --spawn"},
		{[]string{"--spawn", "--gateways", "2"}, "need a shared store"},
		{[]string{"--spawn", "--gateways", "2", "--serve-args", "--in-memory"}, "need a shared store"},
		{[]string{"--spawn", "--gateways", "2", "--serve-args", "--store="}, "need a shared store"},
		{[]string{"--spawn", "--gateways", "2", "--serve-args", "--store postgres://h/db --data-dir /tmp/x"}, "--data-dir"},
		{[]string{"--spawn", "--gateways", "3", "--serve-args", "--store postgres://h/db", "--concurrency", "2"}, "concurrency 2 is less than the 3 gateways"},
		{[]string{"--spawn", "--gateways", "2", "--serve-args", "--store postgres://h/db", "--workload", "ttl,ttl-sustained"}, "ttl-sustained over a shared store (--store) runs on its own"},
		{[]string{"--spawn", "--serve-args", "--store postgres://h/db", "--workload", "create,ttl-sustained"}, "ttl-sustained over a shared store (--store) runs on its own"},
		{[]string{"--spawn", "--gateways", "-1"}, "gateways must be positive"},
		{[]string{"--endpoint", "http://a/,,http://b/"}, "empty endpoint"},
		{[]string{"--endpoint", "http://a/,http://b/", "--server-pid", "12"}, "server-pid names one process"},
		{[]string{"--repeat", "0"}, "--repeat must be at least 1"},
		{[]string{"--repeat", "2", "--workload", "create,ttl-sustained"}, "--repeat does not go with ttl-sustained"},
		{[]string{"--container-ttl", "0"}, "--container-ttl"},
		{[]string{"--container-ttl", "-2"}, "--container-ttl"},
		{[]string{"--container-ttl", "1500ms"}, "--container-ttl"},
		{[]string{"--container-ttl", "off"}, "--container-ttl"},
	} {
		if _, err := parseBenchFlags(tc.args, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one mentioning %s", tc.args, err, tc.want)
		}
	}
	c, err = parseBenchFlags([]string{"--workload", "ttl-sustained", "--ttl", "10s", "--timeline-interval", "10s", "--data-dir-size", "/var/lib/lethe"}, io.Discard)
	if err != nil || c.opts.TimelineInterval != 10*time.Second || c.opts.DataDirSize != "/var/lib/lethe" || c.opts.TTL != 10*time.Second {
		t.Errorf("ttl-sustained flags: %+v, %v", c, err)
	}
	if c.repeat != 1 {
		t.Errorf("repeat %d by default, want 1", c.repeat)
	}
	if c, err := parseBenchFlags([]string{"--repeat", "3"}, io.Discard); err != nil || c.repeat != 3 {
		t.Errorf("--repeat 3: %+v, %v", c, err)
	}
	if o.ContainerTTL != nil {
		t.Errorf("container ttl %d by default, want none (time to live off)", *o.ContainerTTL)
	}
	for flag, want := range map[string]int32{"-1": -1, "3600": 3600, "1h": 3600, "90s": 90} {
		c, err := parseBenchFlags([]string{"--container-ttl", flag}, io.Discard)
		if err != nil || c.opts.ContainerTTL == nil || *c.opts.ContainerTTL != want {
			t.Errorf("--container-ttl %s: %+v, %v; want %d", flag, c, err, want)
		}
	}
	// Several gateways: spawned over a shared store, or endpoints listed.
	for _, args := range [][]string{
		{"--spawn", "--gateways", "3", "--serve-args", "--in-memory=false --store postgres://u@127.0.0.1:5432/db"},
		{"--spawn", "--gateways", "2", "--serve-args", "--store=postgres://u@127.0.0.1:5432/db"},
	} {
		c, err := parseBenchFlags(args, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", args, err)
			continue
		}
		if want := map[string]int{"3": 3, "2": 2}[args[2]]; c.opts.Gateways != want {
			t.Errorf("%q: %d gateways, want %d", args, c.opts.Gateways, want)
		}
	}
	if c, err := parseBenchFlags([]string{"--spawn"}, io.Discard); err != nil || c.opts.Gateways != 1 {
		t.Errorf("--spawn: %+v, %v: want one gateway by default", c, err)
	}
	c, err = parseBenchFlags([]string{"--endpoint", "http://127.0.0.1:8081/, http://127.0.0.1:8082/,http://127.0.0.1:8083/", "--concurrency", "6"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://127.0.0.1:8081/", "http://127.0.0.1:8082/", "http://127.0.0.1:8083/"}; !slices.Equal(c.opts.Endpoints(), want) {
		t.Errorf("endpoints %q, want %q", c.opts.Endpoints(), want)
	}
	if c, err := parseBenchFlags(nil, io.Discard); err != nil || !slices.Equal(c.opts.Endpoints(), []string{bench.DefaultEndpoint}) {
		t.Errorf("default endpoints: %+v, %v", c, err)
	}
	if c, err := parseBenchFlags([]string{"--serve-ceiling", "--addr", "127.0.0.1:0", "--doc-size", "512"}, io.Discard); err != nil || !c.serveCeiling || c.opts.DocSize != 512 {
		t.Errorf("--serve-ceiling: %+v, %v", c, err)
	}
	if c, err := parseBenchFlags([]string{"--serve-ceiling", "--ceiling-work", "20us"}, io.Discard); err != nil || c.ceilingWork != 20*time.Microsecond {
		t.Errorf("--ceiling-work: %+v, %v", c, err)
	}
}
