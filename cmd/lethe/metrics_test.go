package main

import (
	"io"
	"testing"
)

// TestMetricsFlag: metrics are on by default; LETHE_METRICS and --metrics turn
// them off, and the flag wins over the environment.
func TestMetricsFlag(t *testing.T) {
	cases := []struct {
		env  string
		args []string
		want bool
	}{
		{"", nil, true},
		{"false", nil, false},
		{"0", nil, false},
		{"off", nil, false},
		{"true", nil, true},
		{"garbage", nil, true},
		{"", []string{"--metrics=false"}, false},
		{"false", []string{"--metrics=true"}, true},
		{"true", []string{"--metrics=false"}, false},
	}
	for _, tc := range cases {
		t.Setenv("LETHE_METRICS", tc.env)
		c, err := parseServeFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("env %q args %v: %v", tc.env, tc.args, err)
		}
		if c.metrics != tc.want {
			t.Errorf("env %q args %v: metrics %v, want %v", tc.env, tc.args, c.metrics, tc.want)
		}
	}
}
