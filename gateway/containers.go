package gateway

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/ru"
)

func (s *Server) postContainers(w http.ResponseWriter, rq *request) {
	if isQuery(rq) {
		list, err := s.opts.Engine.ListContainers(rq.r.Context(), rq.segs[1])
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		s.queryResources(w, rq, list, "DocumentCollections")
		return
	}
	tp, body, err := createRequest(rq)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.CreateContainerWithThroughput(rq.r.Context(), rq.segs[1], body, tp)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	rq.ridPath = res.RID
	rq.writeResource(w, http.StatusCreated, res.ETag, res.Body)
}

func (s *Server) listContainers(w http.ResponseWriter, rq *request) {
	list, err := s.opts.Engine.ListContainers(rq.r.Context(), rq.segs[1])
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = ru.Metadata
	rq.writeFeed(w, "", "DocumentCollections", bodies(list))
}

func (s *Server) getContainer(w http.ResponseWriter, rq *request) {
	res, info, err := s.opts.Engine.ReadContainer(rq.r.Context(), rq.segs[1], rq.segs[3])
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	rq.ridPath = res.RID
	// Every container read says how far a re-index after a policy change
	// has got (100: done, queries use the new index), and a lazy container
	// how far its lazy indexing has (always done: Lethe indexes lazy
	// containers in the write's own commit), as Cosmos DB does.
	setHeader(w.Header(), "X-Ms-Documentdb-Collection-Index-Transformation-Progress", strconv.Itoa(info.IndexProgress))
	if info.IndexingMode == "lazy" {
		setHeader(w.Header(), "X-Ms-Documentdb-Collection-Lazy-Indexing-Progress", "100")
	}
	if rq.flag("x-ms-documentdb-populatequotainfo") {
		u, err := s.opts.Engine.ContainerUsage(rq.r.Context(), rq.segs[1], rq.segs[3])
		if err != nil {
			s.writeError(w, rq, err)
			return
		}
		setQuotaHeaders(w.Header(), u)
	}
	if rq.header("If-None-Match") == res.ETag {
		s.writeError(w, rq, &lethe.Error{Code: lethe.CodeNotModified})
		return
	}
	rq.writeResource(w, http.StatusOK, res.ETag, res.Body)
}

// quotaHeader is x-ms-resource-quota for a container, as Cosmos DB reports
// it today: a physical partition's 50 GB as documentSize (MB), documentsSize
// and collectionSize (KB), and no limit (-1) on the number of documents.
// Clients compare usage with it (CollectionSizeUsage against
// CollectionSizeQuota in .NET v2), so sizes are never -1. Lethe enforces
// none of them.
const quotaHeader = "functions=25;storedProcedures=100;triggers=25;documentSize=51200;documentsSize=52428800;documentsCount=-1;collectionSize=52428800;"

// setQuotaHeaders reports a container's quota and usage in Cosmos DB's
// format: documentsSize and collectionSize in KB (rounded up), documentSize
// the collection size in MB (rounded down), documentsCount a count; no
// scripts. collectionSize is the stored size of the documents: Lethe does not
// add its index's size, which Cosmos DB's figure includes. Expired documents
// are not counted, from the instant they expire.
func setQuotaHeaders(h http.Header, u engine.Usage) {
	kb := (u.Bytes + 1023) / 1024
	setHeader(h, "X-Ms-Resource-Quota", quotaHeader)
	setHeader(h, "X-Ms-Resource-Usage", "functions=0;storedProcedures=0;triggers=0;documentSize="+strconv.FormatInt(kb/1024, 10)+
		";documentsSize="+strconv.FormatInt(kb, 10)+";documentsCount="+strconv.FormatInt(u.Documents, 10)+
		";collectionSize="+strconv.FormatInt(kb, 10)+";")
}

func (s *Server) putContainer(w http.ResponseWriter, rq *request) {
	body, err := rq.body()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	res, err := s.opts.Engine.ReplaceContainer(rq.r.Context(), rq.segs[1], rq.segs[3], body, rq.header("If-Match"))
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = res.Charge
	rq.ridPath = res.RID
	rq.writeResource(w, http.StatusOK, res.ETag, res.Body)
}

func (s *Server) deleteContainer(w http.ResponseWriter, rq *request) {
	if err := s.opts.Engine.DeleteContainer(rq.r.Context(), rq.segs[1], rq.segs[3]); err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = ru.Metadata
	writeNoContent(w, rq)
}

// rangeRID returns the _rid of a container's range i: the container's 8-byte
// RID followed by the range's index, 8 bytes big-endian, so that each range
// has a _rid and a _self of its own.
func rangeRID(containerRID string, i int) string {
	b, err := base64.StdEncoding.DecodeString(containerRID)
	if err != nil {
		return containerRID
	}
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint64(b, uint64(i)))
}

// getPartitionKeyRanges serves the container's partition key ranges, which
// cover the effective partition key space from "" to "FF". They never change
// (Lethe does not split ranges), and neither does their etag, so the Go SDK's
// incremental refresh (If-None-Match) gets 304 on the second call, as it
// expects.
func (s *Server) getPartitionKeyRanges(w http.ResponseWriter, rq *request) {
	info, err := s.opts.Engine.ContainerInfo(rq.r.Context(), rq.segs[1], rq.segs[3])
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.charge = ru.Metadata
	rq.ridPath = info.RID
	etag := `"pkranges-` + info.RID + `-1"`
	w.Header().Set("etag", etag)
	if rq.header("If-None-Match") == etag {
		s.writeError(w, rq, &lethe.Error{Code: lethe.CodeNotModified})
		return
	}
	items := make([][]byte, len(info.Ranges))
	fraction := strconv.FormatFloat(1/float64(len(info.Ranges)), 'g', -1, 64)
	for i, r := range info.Ranges {
		rangeRID := rangeRID(info.RID, i)
		items[i] = []byte(`{"_rid":` + strconv.Quote(rangeRID) + `,"id":` + strconv.Quote(r.ID) + `,"_etag":` + strconv.Quote(etag) +
			`,"minInclusive":` + strconv.Quote(r.Min) + `,"maxExclusive":` + strconv.Quote(r.Max) + `,"ridPrefix":` + strconv.Itoa(i) +
			`,"_self":` + strconv.Quote("dbs/"+rq.segs[1]+"/colls/"+rq.segs[3]+"/pkranges/"+rangeRID+"/") +
			`,"throughputFraction":` + fraction + `,"status":"online","parents":[],"_ts":0,"lsn":0}`)
	}
	rq.writeFeed(w, info.RID, "PartitionKeyRanges", items)
}
