package query

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// TestBlanks: a query over Blanks gives the rows it gives over as many
// empty documents read one by one, and an aggregate without WHERE whose
// select list reads no document takes ten million of them in with one
// binding of its work limit.
func TestBlanks(t *testing.T) {
	run := func(text string, src Source, limit int) ([]string, error) {
		q, err := Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		page, err := q.Execute(src, ExecOptions{PageSize: 100, WorkLimit: limit, Now: testNow})
		if err != nil {
			return nil, err
		}
		rows := []string{}
		for _, r := range page.Rows {
			rows = append(rows, string(r))
		}
		return rows, nil
	}
	fast := []string{
		"SELECT VALUE COUNT(1) FROM c",
		"SELECT COUNT(1) AS n, SUM(2) AS s, AVG(0.5) AS a, MIN('x') AS lo, MAX(3) AS hi FROM c",
		"SELECT VALUE SUM(0.1) FROM c",
		"SELECT VALUE SUM(1e300) FROM c",
		"SELECT VALUE COUNT(undefined) FROM c",
		"SELECT VALUE MIN([1]) FROM c",
		"SELECT VALUE SUM('a') FROM c",
		"SELECT COUNT(1) + 1 AS n FROM c OFFSET 0 LIMIT 1",
		"SELECT DISTINCT VALUE COUNT(1) FROM c",
	}
	slow := []string{
		"SELECT VALUE COUNT(1) FROM c WHERE true",
		"SELECT VALUE SUM(RAND() * 0) FROM c",
		"SELECT VALUE COUNT(c.x) FROM c",
		"SELECT c.x FROM c",
	}
	for _, text := range append(fast, slow...) {
		for _, n := range []int64{0, 1, 7, 1000} {
			docs := make([]*jsonv.Object, n)
			for i := range docs {
				docs[i] = jsonv.NewObject(0)
			}
			want, err := run(text, newSliceSource(docs), 0)
			if err != nil {
				t.Fatalf("%q over %d empty documents: %v", text, n, err)
			}
			got, err := run(text, &Blanks{N: n}, 0)
			if err != nil || strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("%q over Blanks{%d}: %v, %v; over the documents: %v", text, n, got, err, want)
			}
		}
	}
	const many = 10_000_000
	for _, text := range fast {
		if _, err := run(text, &Blanks{N: many}, 10); err != nil {
			t.Errorf("%q over ten million blanks with a work limit of 10: %v", text, err)
		}
	}
	for _, text := range slow {
		if _, err := run(text, &Blanks{N: many}, 10); !errors.Is(err, ErrWorkLimit) {
			t.Errorf("%q over ten million blanks with a work limit of 10: %v, want ErrWorkLimit", text, err)
		}
	}
	got, err := run("SELECT VALUE COUNT(1) FROM c", &Blanks{N: many}, 10)
	if err != nil || fmt.Sprint(got) != "[10000000]" {
		t.Errorf("a count of ten million blanks: %v, %v", got, err)
	}
}
