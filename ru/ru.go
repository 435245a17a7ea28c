// Package ru is Lethe's request unit (RU) cost model: what each operation
// charges, computed from the work it did. It has no I/O; the engine measures
// the work and the gateway reports the charge in x-ms-request-charge.
//
// The model is deterministic (the same request on the same data always costs
// the same) and calibrated against Azure Cosmos DB's published figures: a
// point read of a 1 KB document costs 1 RU and of a 100 KB one about 10 RU;
// writing a 1 KB document with default indexing costs about 5 RU, less with
// indexing off, more for larger documents and for more indexed terms. A
// replace pays for the index terms it removes as well as those it writes.
// Queries pay for the index entries and documents they read and for what they
// return. The figures are documented in the README's cost model table.
package ru

import "math"

// Model constants, in request units. Exported so that the documentation and
// tests can name them.
const (
	// ReadBase is a point read of up to 1 KB.
	ReadBase = 1.0
	// ReadPerKB is each further KB of a point read (100 KB: about 10 RU).
	ReadPerKB = 0.09

	// WriteBase is the fixed part of any document write or delete.
	WriteBase = 2.55
	// WritePerKB is each KB of the document written (at least one).
	WritePerKB = 0.45
	// WritePerTerm is each index term (secondary index or unique key entry)
	// written or removed. A 1 KB document with default indexing has about
	// ten: 2.55 + 0.45 + 10 x 0.25 = 5.5 RU.
	WritePerTerm = 0.25

	// QueryBase is the fixed part of a query page.
	QueryBase = 2.3
	// QueryPerIndexEntry is each index entry a query reads to find candidates.
	QueryPerIndexEntry = 0.01
	// QueryPerDocument is each document a query or feed loads and evaluates.
	QueryPerDocument = 0.1
	// QueryPerKBLoaded is each KB of the documents it loads.
	QueryPerKBLoaded = 0.05
	// QueryPerKBReturned is each KB of the rows it returns.
	QueryPerKBReturned = 0.1

	// FeedBase is the fixed part of a read feed page (no query to evaluate).
	FeedBase = 1.0

	// Metadata is an operation on databases, containers, offers or
	// partition key ranges.
	Metadata = 1.0
	// Failed is the least a failed request costs (a 404 read, a 409 create,
	// a 400 before any work).
	Failed = 1.0
)

// kb returns n bytes in KB, fractional.
func kb(n int) float64 { return float64(n) / 1024 }

// Round returns x rounded to two decimals, as Cosmos DB reports charges.
func Round(x float64) float64 { return math.Round(x*100) / 100 }

// Read is the charge of a point read of a document of n bytes.
func Read(n int) float64 {
	return Round(ReadBase + ReadPerKB*max(0, kb(n)-1))
}

// Write is the work of one document write (create, replace, upsert, patch)
// or delete.
type Write struct {
	// Bytes is the size of the document written, or deleted.
	Bytes int
	// TermsWritten and TermsRemoved count index terms: secondary index and
	// unique key entries put or deleted.
	TermsWritten, TermsRemoved int
}

// Charge is the write's cost.
func (w Write) Charge() float64 {
	return Round(WriteBase + WritePerKB*max(1, kb(w.Bytes)) + WritePerTerm*float64(w.TermsWritten+w.TermsRemoved))
}

// Query is the work of one query page.
type Query struct {
	// IndexEntries is how many index entries the page read to find candidates.
	IndexEntries int
	// Documents and BytesLoaded are the documents the page loaded and evaluated.
	Documents, BytesLoaded int
	// BytesReturned is the size of the rows returned.
	BytesReturned int
}

// Add adds the work of o to q: a page whose documents came from more than
// one read.
func (q *Query) Add(o Query) {
	q.IndexEntries += o.IndexEntries
	q.Documents += o.Documents
	q.BytesLoaded += o.BytesLoaded
	q.BytesReturned += o.BytesReturned
}

// Charge is the page's cost.
func (q Query) Charge() float64 {
	return Round(QueryBase + QueryPerIndexEntry*float64(q.IndexEntries) + QueryPerDocument*float64(q.Documents) +
		QueryPerKBLoaded*kb(q.BytesLoaded) + QueryPerKBReturned*kb(q.BytesReturned))
}

// Feed is the charge of a read feed page that loaded docs documents of
// loaded bytes in total (expired ones included) and returned the live ones.
func Feed(docs, loaded int) float64 {
	return Round(FeedBase + QueryPerDocument*float64(docs) + QueryPerKBLoaded*kb(loaded))
}
