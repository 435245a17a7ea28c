package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/anishathalye/porcupine"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

const (
	// linearizableGateways is how many Lethe gateways serve the one
	// PostgreSQL database.
	linearizableGateways = 3
	// linearizableClients is how many concurrent clients run, spread over
	// the gateways in turn, each with its own SDK client.
	linearizableClients = 9
	// linearizableOpsPerClient bounds each client's run.
	linearizableOpsPerClient = 150
	// linearizableCheckTimeout bounds the checker's search (the problem is
	// NP-hard; histories of this size take well under a second).
	linearizableCheckTimeout = 60 * time.Second
)

// linearizableDocs are the documents the clients contend on: two ids, each
// in two partitions (four documents, as a document is its partition key
// value and id).
var linearizableDocs = []docKey{{"p0", "x"}, {"p0", "y"}, {"p1", "x"}, {"p1", "y"}}

// TestPostgresGatewaysLinearizable: several Lethe gateways serving one
// PostgreSQL database behave, for point operations on a document, as one
// copy of it would: every read, upsert, create, If-Match replace and
// (conditional) delete, through whichever gateway, appears to take effect at
// one instant between its call and its return. Clients on every gateway
// contend on a few documents, and porcupine checks the history they recorded
// against documentModel. This is what lets an application spread its clients
// over the gateways: a gateway that answered from a stale cache, let two
// If-Match writers win with one etag, or resurrected a deleted document,
// would fail it.
func TestPostgresGatewaysLinearizable(t *testing.T) {
	t.Parallel()
	testLinearizable(t, linearizableGateways)
}

// TestPostgresGatewayLinearizable is TestPostgresGatewaysLinearizable with
// every client on one gateway, which then runs its writes four at a time
// (--writers, split among the live gateways: all four are its own).
func TestPostgresGatewayLinearizable(t *testing.T) {
	t.Parallel()
	testLinearizable(t, 1)
}

// testLinearizable runs the linearizability check over n gateways.
func testLinearizable(t *testing.T, n int) {
	dsn := pgtest.Database(t)
	gateways := make([]*server, n)
	for i := range gateways {
		gateways[i] = startServer(t, serverOpts{Store: dsn})
	}
	mustContainer(t, mustDatabase(t, gateways[0].client(t), "db"), pkContainer("c", nil))
	containers := make([]*azcosmos.ContainerClient, linearizableClients)
	for i := range containers {
		g := gateways[i%len(gateways)]
		cc, err := linearizableClient(t, g).NewContainer("db", "c")
		if err != nil {
			t.Fatal(err)
		}
		// Every gateway knows the container before the run, so that a 404
		// during it is about a document.
		if _, err := cc.Read(ctx, nil); err != nil {
			t.Fatalf("gateway %d does not see the container created through gateway 0: %v", i%len(gateways), err)
		}
		containers[i] = cc
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("%d gateways, %d clients, %d operations each, seed %d", len(gateways), len(containers), linearizableOpsPerClient, seed)
	start := time.Now()
	clock := func() int64 { return int64(time.Since(start)) } // monotonic
	var (
		wg        sync.WaitGroup
		histories = make([][]porcupine.Operation, len(containers))
		processes = newProcessIDs(len(containers))
	)
	for i, cc := range containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &linearizableWorker{
				t: t, cc: cc, client: i, process: i, processes: processes,
				rng: rand.New(rand.NewPCG(seed, uint64(i))), clock: clock,
				lastETag: map[docKey]string{},
			}
			for n := 0; n < linearizableOpsPerClient; n++ {
				c.step(int64(i+1)*1_000_000 + int64(n))
			}
			histories[i] = c.history
		}()
	}
	wg.Wait()
	var history []porcupine.Operation
	for _, h := range histories {
		history = append(history, h...)
	}
	t.Logf("history: %s", summarizeHistory(history))
	if t.Failed() {
		t.FailNow()
	}

	for _, p := range reusedETags(history) {
		t.Error(p)
	}
	res, info := porcupine.CheckOperationsVerbose(documentModel, history, linearizableCheckTimeout)
	if res == porcupine.Ok {
		return
	}
	where := "(no visualization)"
	if f, err := os.CreateTemp("", "lethe-linearizability-*.html"); err != nil {
		t.Logf("visualization: %v", err)
	} else {
		f.Close()
		if err := porcupine.VisualizePath(documentModel, info, f.Name()); err != nil {
			t.Logf("visualization: %v", err)
		} else {
			where = f.Name()
		}
	}
	switch res {
	case porcupine.Illegal:
		t.Fatalf("the history is not linearizable; the longest linearizable prefixes of the offending documents are in %s", where)
	default:
		t.Fatalf("the checker could not decide within %v whether the history is linearizable (%s): treat as a failure; partial linearizations in %s",
			linearizableCheckTimeout, res, where)
	}
}

// linearizableClient is an SDK client for g with the SDK's default retry
// policy and attemptRecorder, which lets the worker tell a definite answer
// from one to a retry of an attempt that may have taken effect.
func linearizableClient(t *testing.T, g *server) *azcosmos.Client {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := azcosmos.NewClientWithKey(g.URL+"/", cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport:        g.httpClient(),
		PerRetryPolicies: []policy.Policy{attemptRecorder{}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// attempts counts the HTTP attempts of one SDK call.
type attempts struct {
	total int
	// indefinite counts attempts without a definite answer: a transport
	// error, 408 or 5xx. A write retried after one may have been applied by
	// it, whatever the retry answers.
	indefinite int
}

type attemptsKey struct{}

// attemptRecorder is a per-retry pipeline policy, so it sees every attempt
// of a call, the SDK's retries included; it counts them into the *attempts
// of the call's context.
type attemptRecorder struct{}

func (attemptRecorder) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if a, ok := req.Raw().Context().Value(attemptsKey{}).(*attempts); ok {
		a.total++
		if err != nil || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500 {
			a.indefinite++
		}
	}
	return resp, err
}

// processIDs hands out porcupine client ids. A client whose operation got no
// answer carries on under a new id: the unanswered operation stays open
// forever in the history, and one id's operations must not overlap (that is
// what the visualization draws as one row).
type processIDs struct {
	mu   sync.Mutex
	next int
}

func newProcessIDs(first int) *processIDs { return &processIDs{next: first} }

func (p *processIDs) take() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	return p.next - 1
}

// linearizableWorker is one client of the run.
type linearizableWorker struct {
	t         *testing.T
	cc        *azcosmos.ContainerClient
	client    int // index among the clients, for messages
	process   int // porcupine client id
	processes *processIDs
	rng       *rand.Rand
	clock     func() int64
	lastETag  map[docKey]string // the last etag this client saw per document
	history   []porcupine.Operation
}

// step runs one random operation on a random document and records it;
// value is what it writes, if it writes.
func (w *linearizableWorker) step(value int64) {
	in := docInput{Doc: linearizableDocs[w.rng.IntN(len(linearizableDocs))]}
	pk := azcosmos.NewPartitionKeyString(in.Doc.PK)
	body := func() []byte {
		b, err := json.Marshal(map[string]any{"id": in.Doc.ID, "pk": in.Doc.PK, "v": value})
		if err != nil {
			panic(err)
		}
		return b
	}
	known, haveETag := w.lastETag[in.Doc]
	// ifMatch returns the options for a conditional request, with
	// probability p when the client has an etag for the document.
	ifMatch := func(p float64) *azcosmos.ItemOptions {
		if !haveETag || w.rng.Float64() >= p {
			return nil
		}
		in.IfMatch = known
		etag := azcore.ETag(known)
		return &azcosmos.ItemOptions{IfMatchEtag: &etag}
	}

	var call func(context.Context) (azcosmos.ItemResponse, error)
	switch r := w.rng.IntN(20); {
	case r < 7:
		in.Kind = docRead
		call = func(ctx context.Context) (azcosmos.ItemResponse, error) {
			return w.cc.ReadItem(ctx, pk, in.Doc.ID, nil)
		}
	case r < 10:
		in.Kind, in.Value = docUpsert, value
		call = func(ctx context.Context) (azcosmos.ItemResponse, error) { return w.cc.UpsertItem(ctx, pk, body(), nil) }
	case r < 13:
		in.Kind, in.Value = docCreate, value
		call = func(ctx context.Context) (azcosmos.ItemResponse, error) { return w.cc.CreateItem(ctx, pk, body(), nil) }
	case r < 17:
		in.Kind, in.Value = docReplace, value
		opts := ifMatch(0.75)
		call = func(ctx context.Context) (azcosmos.ItemResponse, error) {
			return w.cc.ReplaceItem(ctx, pk, in.Doc.ID, body(), opts)
		}
	default:
		in.Kind = docDelete
		opts := ifMatch(0.5)
		call = func(ctx context.Context) (azcosmos.ItemResponse, error) {
			return w.cc.DeleteItem(ctx, pk, in.Doc.ID, opts)
		}
	}

	var a attempts
	callCtx := context.WithValue(ctx, attemptsKey{}, &a)
	begin := w.clock()
	resp, err := call(callCtx)
	end := w.clock()

	out := w.outcome(in, resp, err, a)
	if out.Status == statusUnknown {
		if in.Kind == docRead {
			return // a read that learned nothing changed nothing: leave it out
		}
		w.history = append(w.history, porcupine.Operation{ClientId: w.process, Input: in, Call: begin, Output: out, Return: math.MaxInt64})
		w.process = w.processes.take()
		return
	}
	if out.ETag != "" {
		w.lastETag[in.Doc] = out.ETag
	}
	w.history = append(w.history, porcupine.Operation{ClientId: w.process, Input: in, Call: begin, Output: out, Return: end})
}

// outcome classifies an SDK call's result.
func (w *linearizableWorker) outcome(in docInput, resp azcosmos.ItemResponse, err error, a attempts) docOutput {
	if a.total == 0 {
		w.t.Errorf("client %d: %s %s: attemptRecorder saw no attempt, so it cannot tell a retried write", w.client, in.Kind, in.Doc)
	}
	if in.Kind != docRead && a.indefinite > 0 {
		return docOutput{Status: statusUnknown}
	}
	if err == nil {
		out := docOutput{Status: statusOK, ETag: string(resp.ETag)}
		if in.Kind == docRead {
			var d struct {
				ID string `json:"id"`
				PK string `json:"pk"`
				V  *int64 `json:"v"`
			}
			if jerr := json.Unmarshal(resp.Value, &d); jerr != nil || d.V == nil || d.ID != in.Doc.ID || d.PK != in.Doc.PK {
				w.t.Errorf("client %d: %s %s returned %s", w.client, in.Kind, in.Doc, truncateForLog(resp.Value))
				return docOutput{Status: statusUnknown}
			}
			out.Value = *d.V
		}
		if (in.Kind == docRead || in.Kind.writes()) && out.ETag == "" {
			w.t.Errorf("client %d: %s %s succeeded without an etag", w.client, in.Kind, in.Doc)
		}
		return out
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		// A transport error or a timeout: no answer.
		w.t.Logf("client %d: %s %s: no answer: %v", w.client, in.Kind, in.Doc, err)
		return docOutput{Status: statusUnknown}
	}
	switch re.StatusCode {
	case http.StatusNotFound:
		if re.RawResponse != nil && re.RawResponse.Header.Get("x-ms-substatus") == "1002" {
			// Read session not available: says nothing of the document.
			w.t.Logf("client %d: %s %s: no definite answer: %v", w.client, in.Kind, in.Doc, err)
			return docOutput{Status: statusUnknown}
		}
		return docOutput{Status: statusNotFound}
	case http.StatusConflict:
		if in.Kind == docCreate {
			return docOutput{Status: statusConflict}
		}
	case http.StatusPreconditionFailed:
		if in.IfMatch != "" {
			return docOutput{Status: statusPreconditionFailed}
		}
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		w.t.Logf("client %d: %s %s: no definite answer: %v", w.client, in.Kind, in.Doc, err)
		return docOutput{Status: statusUnknown}
	}
	w.t.Errorf("client %d: %s %s (if-match %q): unexpected %v", w.client, in.Kind, in.Doc, in.IfMatch, err)
	return docOutput{Status: statusUnknown}
}

// summarizeHistory counts a history's operations by kind and outcome.
func summarizeHistory(history []porcupine.Operation) string {
	counts := map[string]int{}
	for _, op := range history {
		in, out := op.Input.(docInput), op.Output.(docOutput)
		k := in.Kind.String()
		if in.IfMatch != "" {
			k += " if-match"
		}
		counts[k+" "+out.Status.String()]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, counts[k])
	}
	return fmt.Sprintf("%d operations; %s", len(history), strings.Join(parts, ", "))
}
