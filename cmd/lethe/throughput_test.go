package main

import (
	"io"
	"testing"
)

// TestEnforceDefaultThroughputFlag: default offers are not enforced unless
// --enforce-default-throughput or LETHE_ENFORCE_DEFAULT_THROUGHPUT says so,
// and the flag wins over the environment.
func TestEnforceDefaultThroughputFlag(t *testing.T) {
	cases := []struct {
		env  string
		args []string
		want bool
	}{
		{"", nil, false},
		{"true", nil, true},
		{"1", nil, true},
		{"no", nil, false},
		{"", []string{"--enforce-default-throughput"}, true},
		{"true", []string{"--enforce-default-throughput=false"}, false},
	}
	for _, tc := range cases {
		t.Setenv("LETHE_ENFORCE_DEFAULT_THROUGHPUT", tc.env)
		c, err := parseServeFlags(tc.args, io.Discard)
		if err != nil {
			t.Fatalf("env %q args %v: %v", tc.env, tc.args, err)
		}
		if c.enforceRU != tc.want {
			t.Errorf("env %q args %v: enforce %v, want %v", tc.env, tc.args, c.enforceRU, tc.want)
		}
	}
}
