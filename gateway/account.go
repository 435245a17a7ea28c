package gateway

import (
	"net/http"

	"github.com/lethe-db/lethe/ru"
)

// queryEngineConfiguration is read by the .NET and Java SDKs (as a JSON string);
// Go and JavaScript ignore it.
const queryEngineConfiguration = `{"maxSqlQueryInputLength":262144,"maxJoinsPerSqlQuery":5,"maxLogicalAndPerSqlQuery":500,"maxLogicalOrPerSqlQuery":500,"maxUdfRefPerSqlQuery":10,"maxInExpressionItemsCount":16000,"queryMaxInMemorySortDocumentCount":500,"maxQueryRequestTimeoutFraction":0.9,"sqlAllowNonFiniteNumbers":false,"sqlAllowAggregateFunctions":true,"sqlAllowSubQuery":true,"sqlAllowScalarSubQuery":true,"allowNewKeywords":true,"sqlAllowLike":true,"sqlAllowGroupByClause":true,"maxSpatialQueryCells":12,"spatialMaxGeometryPointCount":256,"sqlDisableOptimizationFlags":0,"sqlAllowTop":true,"enableSpatialIndexing":true}`

type location struct {
	Name     string `json:"name"`
	Endpoint string `json:"databaseAccountEndpoint"`
}

// getAccount answers GET /, which both SDKs call first. It advertises one
// region, at Options.AdvertiseEndpoint or else at this very endpoint (scheme
// and Host of the request), so the SDKs keep talking to the address they were
// given.
func (s *Server) getAccount(w http.ResponseWriter, rq *request) {
	endpoint := s.opts.AdvertiseEndpoint
	if endpoint == "" {
		scheme := "http"
		if rq.r.TLS != nil {
			scheme = "https"
		}
		endpoint = scheme + "://" + rq.r.Host + "/"
	}
	loc := []location{{Name: "South Central US", Endpoint: endpoint}}
	body := struct {
		ID                    string            `json:"id"`
		RID                   string            `json:"_rid"`
		Self                  string            `json:"_self"`
		Dbs                   string            `json:"_dbs"`
		Media                 string            `json:"media"`
		Addresses             string            `json:"addresses"`
		Writable              []location        `json:"writableLocations"`
		Readable              []location        `json:"readableLocations"`
		MultipleWrites        bool              `json:"enableMultipleWriteLocations"`
		Consistency           map[string]string `json:"userConsistencyPolicy"`
		QueryEngineConfig     string            `json:"queryEngineConfiguration"`
		SystemReplication     map[string]int    `json:"systemReplicationPolicy"`
		ReadPolicy            map[string]int    `json:"readPolicy"`
		UserReplicationPolicy map[string]int    `json:"userReplicationPolicy"`
	}{
		ID: "lethe", RID: "lethe.localhost", Dbs: "//dbs/", Media: "//media/", Addresses: "//addresses/",
		Writable: loc, Readable: loc,
		Consistency:           map[string]string{"defaultConsistencyLevel": s.opts.Consistency},
		QueryEngineConfig:     queryEngineConfiguration,
		SystemReplication:     map[string]int{"minReplicaSetSize": 1, "maxReplicasetSize": 1},
		ReadPolicy:            map[string]int{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		UserReplicationPolicy: map[string]int{"minReplicaSetSize": 1, "maxReplicasetSize": 1},
	}
	rq.charge = ru.Metadata
	rq.writeJSON(w, http.StatusOK, body)
}
