package gateway

import (
	"net/http"
	"strings"

	"github.com/lethe-db/lethe/metrics"
)

// operationOf names the operation a request asks for, for the request
// metrics. It mirrors route (same path shapes, methods and the headers
// postDocuments, postDatabases, postContainers and queryDocuments look at) and
// is decided before authentication, so that refused requests are counted
// under the operation they attempted. Anything route would not serve is
// metrics.OpUnknown; label values never come from the path itself.
func operationOf(method string, segs []string, h http.Header) metrics.Operation {
	n := len(segs)
	if n == 0 {
		return pick(method, metrics.OpAccount, 0, 0, 0, 0)
	}
	switch segs[0] {
	case "dbs":
		switch {
		case n == 1:
			if method == http.MethodPost && isQueryHeader(h) {
				return metrics.OpQueryDatabases
			}
			return pick(method, metrics.OpListDatabases, metrics.OpCreateDatabase, 0, 0, 0)
		case n == 2:
			return pick(method, metrics.OpReadDatabase, 0, 0, 0, metrics.OpDeleteDatabase)
		case segs[2] != "colls":
			return metrics.OpUnknown
		case n == 3:
			if method == http.MethodPost && isQueryHeader(h) {
				return metrics.OpQueryContainers
			}
			return pick(method, metrics.OpListContainers, metrics.OpCreateContainer, 0, 0, 0)
		case n == 4:
			return pick(method, metrics.OpReadContainer, 0, metrics.OpReplaceContainer, 0, metrics.OpDeleteContainer)
		case n == 5 && segs[4] == "pkranges":
			return pick(method, metrics.OpReadPartitionKeyRanges, 0, 0, 0, 0)
		case segs[4] != "docs":
			return metrics.OpUnknown
		case n == 5:
			if method == http.MethodPost {
				return postDocumentsOperation(h)
			}
			if method == http.MethodGet && h.Get("A-IM") != "" {
				return metrics.OpChangeFeed
			}
			return pick(method, metrics.OpReadFeed, 0, 0, 0, 0)
		case n == 6:
			return pick(method, metrics.OpReadDocument, 0, metrics.OpReplaceDocument, metrics.OpPatchDocument, metrics.OpDeleteDocument)
		}
	case "offers":
		switch n {
		case 1:
			return pick(method, metrics.OpListOffers, metrics.OpQueryOffers, 0, 0, 0)
		case 2:
			return pick(method, metrics.OpReadOffer, 0, metrics.OpReplaceOffer, 0, 0)
		}
	}
	return metrics.OpUnknown
}

// postDocumentsOperation tells apart what postDocuments serves, in its order:
// query (or the JavaScript SDK's query-plan request), batch, upsert, create.
func postDocumentsOperation(h http.Header) metrics.Operation {
	switch {
	case isQueryHeader(h):
		if headerFlag(h, "X-Ms-Cosmos-Is-Query-Plan-Request") {
			return metrics.OpQueryPlan
		}
		return metrics.OpQueryDocuments
	case headerFlag(h, "X-Ms-Cosmos-Is-Batch-Request"):
		return metrics.OpBatch
	case headerFlag(h, "X-Ms-Documentdb-Is-Upsert"):
		return metrics.OpUpsertDocument
	}
	return metrics.OpCreateDocument
}

// pick returns the operation for method among those a resource serves; 0
// (metrics.OpUnknown) marks a method it does not.
func pick(method string, get, post, put, patch, del metrics.Operation) metrics.Operation {
	switch method {
	case http.MethodGet:
		return get
	case http.MethodPost:
		return post
	case http.MethodPut:
		return put
	case http.MethodPatch:
		return patch
	case http.MethodDelete:
		return del
	}
	return metrics.OpUnknown
}

// isQueryHeader is isQuery on a header map: Content-Type application/query+json.
func isQueryHeader(h http.Header) bool {
	ct := h.Get("Content-Type")
	return len(ct) >= 22 && ct[:22] == "application/query+json"
}

// headerFlag reads a boolean header ("true"/"True"), as request.flag does.
func headerFlag(h http.Header, name string) bool { return strings.EqualFold(h.Get(name), "true") }
