package metrics

// Operation is what a request asked for, the operation label of the request
// metrics. It is one of a small fixed set, so that label values stay bounded
// whatever paths clients send.
type Operation uint8

// The operations. The gateway derives one from the route, method and headers
// of each request; anything it cannot name is OpUnknown.
const (
	OpUnknown Operation = iota
	OpAccount
	OpMetrics
	OpListDatabases
	OpQueryDatabases
	OpCreateDatabase
	OpReadDatabase
	OpDeleteDatabase
	OpListContainers
	OpQueryContainers
	OpCreateContainer
	OpReadContainer
	OpReplaceContainer
	OpDeleteContainer
	OpReadPartitionKeyRanges
	OpReadDocument
	OpCreateDocument
	OpUpsertDocument
	OpReplaceDocument
	OpPatchDocument
	OpDeleteDocument
	OpBatch
	OpQueryDocuments
	OpQueryPlan
	OpReadFeed
	OpChangeFeed
	OpListOffers
	OpQueryOffers
	OpReadOffer
	OpReplaceOffer
	numOperations
)

var operationNames = [numOperations]string{
	OpUnknown:                "Unknown",
	OpAccount:                "Account",
	OpMetrics:                "Metrics",
	OpListDatabases:          "ListDatabases",
	OpQueryDatabases:         "QueryDatabases",
	OpCreateDatabase:         "CreateDatabase",
	OpReadDatabase:           "ReadDatabase",
	OpDeleteDatabase:         "DeleteDatabase",
	OpListContainers:         "ListContainers",
	OpQueryContainers:        "QueryContainers",
	OpCreateContainer:        "CreateContainer",
	OpReadContainer:          "ReadContainer",
	OpReplaceContainer:       "ReplaceContainer",
	OpDeleteContainer:        "DeleteContainer",
	OpReadPartitionKeyRanges: "ReadPartitionKeyRanges",
	OpReadDocument:           "ReadDocument",
	OpCreateDocument:         "CreateDocument",
	OpUpsertDocument:         "UpsertDocument",
	OpReplaceDocument:        "ReplaceDocument",
	OpPatchDocument:          "PatchDocument",
	OpDeleteDocument:         "DeleteDocument",
	OpBatch:                  "Batch",
	OpQueryDocuments:         "QueryDocuments",
	OpQueryPlan:              "QueryPlan",
	OpReadFeed:               "ReadFeed",
	OpChangeFeed:             "ChangeFeed",
	OpListOffers:             "ListOffers",
	OpQueryOffers:            "QueryOffers",
	OpReadOffer:              "ReadOffer",
	OpReplaceOffer:           "ReplaceOffer",
}

// String returns the operation's label value; out-of-range values are "Unknown".
func (o Operation) String() string {
	if o >= numOperations {
		return operationNames[OpUnknown]
	}
	return operationNames[o]
}
