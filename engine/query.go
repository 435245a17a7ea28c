package engine

import (
	"context"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/query"
)

// QueryOptions select one page of a query's results.
type QueryOptions struct {
	// Text is the SQL query.
	Text string
	// PK restricts the query to one partition key value; nil queries every partition.
	PK lethe.PartitionKey
	// MaxItems is the page size (0: the default of 100; at most 1000).
	MaxItems int
	// Continuation resumes the query after the previous page.
	Continuation string
}

// selectStar matches the one statement shape served until the query engine
// lands: SELECT * FROM <alias> [WHERE <expr>].
var selectStar = regexp.MustCompile(`(?is)^\s*SELECT\s+\*\s+(FROM\b.*)$`)

// ParseQuery parses a query of the supported shape, SELECT * FROM <alias>
// [WHERE <expr>], and returns its filter. Anything else is a BadRequest that
// says so: no part of a query is ever silently ignored.
func ParseQuery(text string) (*query.Condition, error) {
	m := selectStar.FindStringSubmatchIndex(text)
	if m == nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "Lethe serves only queries of the form 'SELECT * FROM c [WHERE ...]' for now; the full query language comes in a later release. Query: %s", truncate(text, 200))
	}
	// Blank out "SELECT *" (keeping newlines) so that error positions refer to
	// the query as the client wrote it.
	prefix := []byte(text[:m[2]])
	for i, c := range prefix {
		if c != '\n' {
			prefix[i] = ' '
		}
	}
	cond, err := query.ParseCondition(string(prefix) + text[m[2]:])
	if err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The query is invalid or uses what Lethe does not support yet: %s", err.Error())
	}
	return cond, nil
}

// QueryDocuments runs a SELECT * query over a container's live documents and
// returns one page, in insertion order. Expired documents never match.
// Returns BadRequest for unsupported queries and bad continuations, NotFound
// for a missing container.
func (e *Engine) QueryDocuments(ctx context.Context, dbID, collID string, opts QueryOptions) (FeedPage, error) {
	defer e.begin()()
	cond, err := ParseQuery(opts.Text)
	if err != nil {
		return FeedPage{}, err
	}
	h := fnv.New32a()
	h.Write([]byte(strings.TrimSpace(opts.Text)))
	return e.feed(ctx, dbID, collID, FeedOptions{PK: opts.PK, MaxItems: opts.MaxItems, Continuation: opts.Continuation}, cond, h.Sum32()|1)
}
