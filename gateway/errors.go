package gateway

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/ru"
)

// statusOf maps domain codes to HTTP statuses; every error response goes through it.
var statusOf = map[string]int{
	lethe.CodeBadRequest:          http.StatusBadRequest,
	lethe.CodeUnauthorized:        http.StatusUnauthorized,
	lethe.CodeForbidden:           http.StatusForbidden,
	lethe.CodeNotFound:            http.StatusNotFound,
	lethe.CodeMethodNotAllowed:    http.StatusMethodNotAllowed,
	lethe.CodeRequestTimeout:      http.StatusRequestTimeout,
	lethe.CodeConflict:            http.StatusConflict,
	lethe.CodeGone:                http.StatusGone,
	lethe.CodePreconditionFailed:  http.StatusPreconditionFailed,
	lethe.CodeEntityTooLarge:      http.StatusRequestEntityTooLarge,
	lethe.CodeUnsupportedMedia:    http.StatusUnsupportedMediaType,
	lethe.CodeUnprocessableEntity: http.StatusUnprocessableEntity,
	lethe.CodeFailedDependency:    http.StatusFailedDependency,
	lethe.CodeTooManyRequests:     http.StatusTooManyRequests,
	lethe.CodeInternal:            http.StatusInternalServerError,
	lethe.CodeServiceUnavailable:  http.StatusServiceUnavailable,
	lethe.CodeNotModified:         http.StatusNotModified,
	lethe.CodeMultiStatus:         http.StatusMultiStatus,
}

// statusFor returns the HTTP status of err.
func statusFor(err error) int {
	if st, ok := statusOf[lethe.ErrorCode(err)]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// writeError writes err as a Cosmos error: the mapped status and a JSON body
// {"code","message"}. Internal errors are logged and shown as "Internal error.".
func (s *Server) writeError(w http.ResponseWriter, rq *request, err error) {
	orig := err
	err = engine.Translate(err)
	code := lethe.ErrorCode(err)
	status := statusFor(err)
	if code == lethe.CodeInternal || code == lethe.CodeServiceUnavailable && err != orig {
		// The client sees only the code; the operator needs the cause.
		s.log.Error("request failed", "method", rq.r.Method, "path", rq.r.URL.Path, "activity", rq.activity, "err", orig)
	}
	h := w.Header()
	if rq.charge <= 0 {
		rq.charge = ru.Failed
	}
	rq.setCommonHeaders(h)
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	var e *lethe.Error
	domain := errors.As(err, &e)
	if domain && e.SubStatus != 0 {
		h.Set("x-ms-substatus", strconv.Itoa(e.SubStatus))
	}
	if domain && e.RetryAfter > 0 {
		h.Set("x-ms-retry-after-ms", strconv.FormatInt(max(1, e.RetryAfter.Milliseconds()), 10))
	}
	body := struct {
		Code           string `json:"code"`
		Message        string `json:"message"`
		AdditionalInfo string `json:"additionalErrorInfo,omitempty"`
	}{Code: code, Message: lethe.ErrorMessage(err)}
	if domain {
		body.AdditionalInfo = e.AdditionalInfo
	}
	rq.writeJSON(w, status, body)
}
