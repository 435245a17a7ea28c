// Package e2e holds Lethe's end-to-end tests: they start the real lethe binary
// on a free loopback port and drive it with the official Azure Cosmos DB Go SDK
// (azcosmos) and with raw signed HTTP requests. The JavaScript SDK tests live in
// e2e/js.
package e2e
