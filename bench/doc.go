// Package bench is Lethe's load generator, `lethe bench`: it drives any
// Cosmos DB-compatible endpoint with the official Go SDK and reports
// throughput, latency percentiles, request units, errors, and (for a local
// server) the server's memory and CPU time per operation.
//
// # Workloads
//
// Each workload runs Options.Concurrency goroutines that share one SDK
// client (one per gateway, see below), for Options.Duration or Options.Ops
// operations, after a warmup that is not counted:
//
//	create         point creates of new documents
//	read           point reads of existing documents
//	replace        point replaces of existing documents
//	upsert         upserts of existing documents
//	patch          partial updates (PATCH) incrementing an existing document's v
//	delete         point deletes of the documents the create workload made earlier in
//	               the run, oldest first; it needs create before it, and ends early
//	               when none is left
//	query-pk       SELECT * FROM c WHERE c.pk = @pk, the first page of 10
//	query-cross    SELECT * FROM c WHERE c.k = @k across partitions (ten documents
//	               match), the first page of 10
//	query-list     SELECT * FROM c in one partition (its key in the request), the first page of 10
//	query-order    SELECT * FROM c ORDER BY c._ts DESC in one partition, the first page of 10;
//	               a run that includes it gives the data container a composite index on
//	               /pk and /_ts, as a container serving that query would have
//	query-range    SELECT * FROM c WHERE c.k >= @k across partitions, k a random
//	               document's (half the documents match, on average), the first page of 10
//	mixed          80% point reads, 20% upserts
//	ttl            creates of documents that carry a short ttl, so the purge runs all along
//	ttl-sustained  the ttl workload's creates, in a container of its own, sampled
//	               once a second: does the purge keep up with a load that never stops?
//
// Workloads that address existing documents run over a container populated
// first with Options.Docs documents (timed separately, never part of a
// workload's figures), choosing documents uniformly or with YCSB's Zipf skew
// (Keys). Documents are described in document.go.
//
// # ttl-sustained
//
// The backlog a TTL purge leaves builds only under a load that does not
// stop, so this workload watches it over time. Once a second it records the
// operations completed; from the server's GET /metrics (Prometheus text, no
// auth) the expired documents and bytes pending, the oldest pending age, the
// documents purged and the batches deferred, and the purge's share and busy
// time when the server exports them; the data directory's disk usage; and
// the server's CPU and RSS from /proc. With Options.Spawn it runs twice in
// one invocation, each time on a fresh server of its own with a fresh
// temporary data directory (or in memory, as Options.ServeArgs say): first
// with the purge off (--disable-purger), then on, one server at a time while
// the run's own server stays idle. The report has a timeline per run, a row
// per Options.TimelineInterval (the JSON has every sample), and a summary
// side by side: foreground ops/s and their ratio, latency, the backlog at
// the end, the oldest pending age and the data directory's growth over the
// second half of the run (the steady state), and the purge rate. Against an
// endpoint it runs once, with the data directory's size only when
// Options.DataDirSize names it. The ceiling does not run it.
//
// # Several gateways
//
// Lethe can run as several gateways, separate `lethe serve` processes over
// one store (--store postgres://...). With Options.Gateways above 1, Spawn
// starts that many, each with the same Options.ServeArgs (which must name
// the store), a temporary data directory and a loopback port of its own;
// without Spawn, Options.Endpoint may list gateways started by hand,
// comma-separated. Each gateway gets an SDK client and HTTP transport of its
// own, and worker i of every workload uses gateway i % n. The set-up goes
// through the first gateway only: the database (which the others must then
// see), deleting and recreating each container, and populating; the other
// gateways' clients just address the same names. The server's memory and
// CPU figures are the sums over the gateways' processes, and each
// measurement also has every gateway's share: its workers, operations,
// errors, RSS and CPU. The quiescing before each workload waits for every
// gateway. The ceiling stays one process. ttl-sustained starts as many
// gateways for each of its runs (or samples every endpoint listed), and a
// sample is all of theirs: their CPU and memory summed, the backlog the
// largest any of them reports (they measure the same store), the documents
// purged and the purge's busy time summed (one gateway purges a container at
// a time), its share the largest.
//
// # The ceiling
//
// With Options.Ceiling every workload also runs, in the same run, against
// Ceiling: a server that answers with canned responses and stores nothing.
// It measures what the SDK, HTTP and JSON cost on this machine, the most any
// server could do here, and the report gives each figure as a ratio to it.
// Absolute figures drift on shared machines; ratios measured minutes apart
// in the same run drift much less. A workload that writes nothing runs on
// both in turns (Options.Slices, five slices each by default, alternating
// which goes first), so that the drift within the run falls on both alike.
// A workload that writes runs on the server first, in one piece, then on the
// ceiling: its flushes and compactions would otherwise run during the
// ceiling's slices and slow it down.
//
// # Rules
//
//   - Failed operations are counted by status, never fatal, and are not part
//     of the latency figures. The SDK retries nothing unless Options.Retries
//     says so, so every failure shows.
//   - An operation cut short by the end of the run's context (Ctrl-C) counts
//     neither as a success nor as an error; the report covers what was
//     measured before and says it was interrupted.
//   - Server memory and CPU come from /proc (Linux), for spawned servers and
//     for Options.ServerPID. Before each workload the run waits for the local
//     servers to go idle, and it reports how much CPU the idle server and the
//     rest of the machine used meanwhile: client and servers share the
//     machine's cores, and anything else running is noise.
//   - The benchmark owns the database "lethe-bench" on the endpoint: it
//     deletes and recreates the containers it uses.
package bench
