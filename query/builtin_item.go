package query

import (
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

// Item functions.
func init() {
	register(&function{name: "DocumentId", minArgs: 1, maxArgs: 1, call: documentID})
}

// documentID is DocumentId(root): the document's integer identifier within
// its partition, the document part of its _rid. A document _rid is 16 bytes
// (the container's 8, then the document's 8, little-endian) in base64 with
// '/' written as '-'. Cosmos DB requires the FROM alias as the argument; here
// any object carrying a document _rid works, and anything else gives
// undefined.
func documentID(args []jsonv.Value) jsonv.Value {
	o, ok := args[0].(*jsonv.Object)
	if !ok {
		return undefined
	}
	v, _ := o.Get("_rid")
	rid, ok := v.(string)
	if !ok {
		return undefined
	}
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(rid, "-", "/"))
	if err != nil || len(b) != 16 {
		return undefined
	}
	return jsonv.Number(strconv.FormatUint(binary.LittleEndian.Uint64(b[8:]), 10))
}
