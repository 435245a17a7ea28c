package e2e

import (
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// TestAccount proves GET / (the first request of every SDK): the account shape
// PROTOCOL.md requires, the advertised endpoint being this server, the default
// consistency Session, and --consistency Strong being advertised and working
// with the SDK.
func TestAccount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Session"},
		{[]string{"--consistency", "Strong"}, "Strong"},
		{[]string{"--consistency", "eventual"}, "Eventual"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			s := startServer(t, serverOpts{InMemory: true, Args: tc.args})
			r := s.do(t, "GET", "/", nil, nil)
			r.wantStatus(t, "GET /", http.StatusOK)
			var acct struct {
				ID          string `json:"id"`
				Consistency struct {
					Level string `json:"defaultConsistencyLevel"`
				} `json:"userConsistencyPolicy"`
				QEC any `json:"queryEngineConfiguration"`
			}
			if err := json.Unmarshal(r.Body, &acct); err != nil {
				t.Fatal(err)
			}
			writable, readable := locations(t, r.Body, "writableLocations"), locations(t, r.Body, "readableLocations")
			if acct.Consistency.Level != tc.want {
				t.Errorf("defaultConsistencyLevel = %q; want %q", acct.Consistency.Level, tc.want)
			}
			if acct.ID == "" || acct.ID == "localhost" {
				t.Errorf("account id %q", acct.ID)
			}
			for _, l := range append(writable, readable...) {
				if l["databaseAccountEndpoint"] != s.URL+"/" {
					t.Errorf("location %v; want endpoint %s/", l, s.URL)
				}
			}
			if len(writable) != 1 || len(readable) != 1 {
				t.Errorf("locations: %d writable, %d readable; want 1 each", len(writable), len(readable))
			}
			if qs, ok := acct.QEC.(string); !ok || !json.Valid([]byte(qs)) {
				t.Errorf("queryEngineConfiguration %#v; want a string holding JSON", acct.QEC)
			}
			if strings.Contains(string(r.Body), "enablePerPartitionFailoverBehavior") {
				t.Error("GET / sends enablePerPartitionFailoverBehavior")
			}
			if r.charge() <= 0 || r.Header.Get("x-ms-activity-id") == "" {
				t.Errorf("GET / charge %v activity %q", r.charge(), r.Header.Get("x-ms-activity-id"))
			}
			// The SDK works against it.
			c := s.client(t)
			cc := mustContainer(t, mustDatabase(t, c, "acct"), pkContainer("c", nil))
			pk := azcosmos.NewPartitionKeyString("p")
			if _, err := cc.CreateItem(ctx, pk, []byte(`{"id":"a","pk":"p"}`), nil); err != nil {
				t.Fatalf("create: %v", err)
			}
			if st := readStatus(t, cc, pk, "a"); st != http.StatusOK {
				t.Errorf("read: %d", st)
			}
			// A read asking for a weaker level is fine too.
			level := azcosmos.ConsistencyLevelEventual
			if _, err := cc.ReadItem(ctx, pk, "a", &azcosmos.ItemOptions{ConsistencyLevel: &level}); err != nil {
				t.Errorf("read with ConsistencyLevel Eventual: %v", err)
			}
		})
	}
}

func locations(t *testing.T, body []byte, field string) []map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	_ = json.Unmarshal(body, &m)
	var out []map[string]string
	if err := json.Unmarshal(m[field], &out); err != nil {
		t.Errorf("%s: %v", field, err)
	}
	return out
}

// TestCommandLine proves `lethe version` prints a version and that serve refuses
// an invalid configuration with a non-zero exit and a message naming the flag.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(letheBin, "version").Output()
	if err != nil {
		t.Fatalf("lethe version: %v", err)
	}
	if !regexp.MustCompile(`^lethe \S+\n$`).Match(out) {
		t.Errorf("lethe version printed %q; want \"lethe <version>\"", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--in-memory", "--addr", "127.0.0.1:0", "--consistency", "Sometimes"}, "--consistency"},
		{[]string{"serve", "--in-memory", "--addr", "127.0.0.1:0", "--key", "not base64!"}, "--key"},
		{[]string{"serve", "--in-memory", "--addr", "127.0.0.1:0", "--log-level", "loud"}, "--log-level"},
		{[]string{"serve", "--in-memory", "--addr", "127.0.0.1:0", "stray"}, "unexpected"},
		{[]string{"frobnicate"}, "unknown command"},
	} {
		cmd := exec.Command(letheBin, tc.args...)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
			t.Errorf("lethe %v: %v; want a non-zero exit", tc.args, err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("lethe %v printed %q; want it to mention %q", tc.args, out, tc.want)
		}
	}
}
