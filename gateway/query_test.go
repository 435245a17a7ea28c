package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/jsonv"
)

// referenceQuerySpec decodes a query body the way the gateway did before
// parseQuerySpec: CheckJSON, then encoding/json into a struct, then each
// parameter's value parsed again. parseQuerySpec must agree with it.
func referenceQuerySpec(body []byte) (string, map[string]jsonv.Value, error) {
	if err := engine.CheckJSON(body); err != nil {
		return "", nil, err
	}
	var q struct {
		Query      string `json:"query"`
		Parameters []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(body, &q); err != nil || strings.TrimSpace(q.Query) == "" {
		return "", nil, badQueryBody()
	}
	var params map[string]jsonv.Value
	for _, p := range q.Parameters {
		name, ok := strings.CutPrefix(p.Name, "@")
		if !ok || name == "" {
			return "", nil, lethe.Errorf(lethe.CodeBadRequest, "The query parameter name '%s' is invalid: it must start with '@'.", truncateInput(p.Name, 100))
		}
		if params == nil {
			params = map[string]jsonv.Value{}
		}
		if len(p.Value) == 0 {
			continue
		}
		v, err := jsonv.Parse(p.Value)
		if err != nil {
			return "", nil, err
		}
		params[name] = v
	}
	return q.Query, params, nil
}

var querySpecSeeds = []string{
	`{"query":"SELECT * FROM c"}`,
	`{"query":"SELECT * FROM c WHERE c.pk = @pk","parameters":[{"name":"@pk","value":"p1"}]}`,
	`{"query":"SELECT * FROM c WHERE c.n IN (@a, @b)","parameters":[{"name":"@a","value":1},{"name":"@b","value":[1,{"x":null}]}]}`,
	`{"query":"SELECT @u","parameters":[{"name":"@u"}]}`,
	`{"query":"SELECT @n","parameters":[{"name":"@n","value":null}]}`,
	`{"Query":"SELECT 1","PARAMETERS":[{"Name":"@a","VALUE":true}]}`,
	`{"query":"SELECT 1","QUERY":"SELECT 2"}`,
	`{"query":"SELECT 1","parameters":null}`,
	`{"query":"SELECT 1","parameters":[null]}`,
	`{"query":"SELECT 1","parameters":[{"name":"a","value":1}]}`,
	`{"query":"SELECT 1","parameters":[{"name":"@","value":1}]}`,
	`{"query":"SELECT 1","parameters":[{"name":5}]}`,
	`{"query":"SELECT 1","parameters":[5]}`,
	`{"query":"SELECT 1","parameters":{}}`,
	`{"query":"SELECT 1","parameters":[{"name":"@a","value":1},{"name":"@a","value":2}]}`,
	`{"query":5}`,
	`{"query":null}`,
	`{"query":"   "}`,
	`{"query":"SELECT 1","query":"SELECT 2"}`,
	`{"query":"SELECT 1","extra":{"deep":[1,2,3]}}`,
	`[]`,
	`"SELECT 1"`,
	`null`,
	`{"query":"SELECT 1"`,
	`{"query":"SELECT 1"} trailing`,
	``,
}

func TestParseQuerySpecAgreesWithEncodingJSON(t *testing.T) {
	for _, body := range querySpecSeeds {
		t.Run(body, func(t *testing.T) { compareQuerySpec(t, []byte(body)) })
	}
}

func TestParseQuerySpec(t *testing.T) {
	text, params, err := parseQuerySpec([]byte(`{"query":"SELECT * FROM c WHERE c.pk = @pk AND c.x = @x","parameters":[{"name":"@pk","value":"p1"},{"name":"@x"},{"name":"@n","value":null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if text != "SELECT * FROM c WHERE c.pk = @pk AND c.x = @x" {
		t.Errorf("text = %q", text)
	}
	if v, ok := params["pk"]; !ok || v != "p1" {
		t.Errorf("@pk = %v, %v; want p1", v, ok)
	}
	if _, ok := params["x"]; ok {
		t.Error("@x without a value is defined; want undefined")
	}
	if v, ok := params["n"]; !ok || v != nil {
		t.Errorf("@n = %v, %v; want a defined null", v, ok)
	}
	for _, body := range []string{`{"query":5}`, `{"query":""}`, `{"query":"SELECT 1","parameters":[{"name":"a"}]}`, `{"query":"SELECT 1"`} {
		if _, _, err := parseQuerySpec([]byte(body)); lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Errorf("%s: err = %v, want a 400", body, err)
		}
	}
}

// FuzzParseQuerySpec checks parseQuerySpec against the encoding/json decoder
// it replaced, on any body.
func FuzzParseQuerySpec(f *testing.F) {
	for _, s := range querySpecSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !utf8.Valid(body) {
			// encoding/json replaces invalid UTF-8 in strings and jsonv
			// keeps it; both accept or refuse the same bodies.
			_, _, got := parseQuerySpec(body)
			_, _, want := referenceQuerySpec(body)
			if (got == nil) != (want == nil) {
				t.Fatalf("%q: err %v, reference %v", body, got, want)
			}
			return
		}
		compareQuerySpec(t, body)
	})
}

func compareQuerySpec(t *testing.T, body []byte) {
	t.Helper()
	text, params, err := parseQuerySpec(body)
	wantText, wantParams, wantErr := referenceQuerySpec(body)
	if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
		t.Fatalf("%q: err %v, reference %v", body, err, wantErr)
	}
	if err != nil {
		if lethe.ErrorCode(err) != lethe.CodeBadRequest {
			t.Fatalf("%q: err %v is not a 400", body, err)
		}
		return
	}
	if text != wantText || len(params) != len(wantParams) || (params == nil) != (wantParams == nil) {
		t.Fatalf("%q: got %q %v, reference %q %v", body, text, params, wantText, wantParams)
	}
	for k, want := range wantParams {
		if got, ok := params[k]; !ok || !jsonv.Equal(got, want) {
			t.Fatalf("%q: @%s = %v, reference %v", body, k, got, want)
		}
	}
}
