package metrics

import "testing"

func TestOperationNames(t *testing.T) {
	seen := map[string]Operation{}
	for op := Operation(0); op < numOperations; op++ {
		name := op.String()
		if name == "" {
			t.Errorf("operation %d has no name", op)
		}
		if prev, ok := seen[name]; ok {
			t.Errorf("operations %d and %d are both named %q", prev, op, name)
		}
		seen[name] = op
	}
	if got := numOperations.String(); got != "Unknown" {
		t.Errorf("out-of-range operation = %q, want Unknown", got)
	}
	if got := Operation(255).String(); got != "Unknown" {
		t.Errorf("Operation(255) = %q, want Unknown", got)
	}
}
