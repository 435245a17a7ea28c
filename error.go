// Package lethe holds the domain types shared by every layer of the Lethe server:
// error codes that map one-to-one onto Cosmos DB REST statuses, and nothing that
// does I/O. It imports nothing of ours, so every other package may import it.
package lethe

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Each maps to one HTTP status and Cosmos "code" string in the gateway.
const (
	CodeBadRequest          = "BadRequest"            // 400
	CodeUnauthorized        = "Unauthorized"          // 401
	CodeForbidden           = "Forbidden"             // 403
	CodeNotFound            = "NotFound"              // 404
	CodeMethodNotAllowed    = "MethodNotAllowed"      // 405
	CodeConflict            = "Conflict"              // 409
	CodePreconditionFailed  = "PreconditionFailed"    // 412
	CodeEntityTooLarge      = "RequestEntityTooLarge" // 413
	CodeFailedDependency    = "FailedDependency"      // 424
	CodeTooManyRequests     = "TooManyRequests"       // 429
	CodeInternal            = "InternalServerError"   // 500
	CodeServiceUnavailable  = "ServiceUnavailable"    // 503
	CodeUnsupportedMedia    = "UnsupportedMediaType"  // 415
	CodeNotModified         = "NotModified"           // 304, used by conditional reads
	CodeRequestTimeout      = "RequestTimeout"        // 408
	CodeMultiStatus         = "MultiStatus"           // 207, failed transactional batch
	CodeGone                = "Gone"                  // 410
	CodeUnprocessableEntity = "UnprocessableEntity"   // 422
)

// Error is a domain error: a Cosmos error code, an optional substatus and a message
// safe to show to clients. Any error that is not an *Error is an internal error.
type Error struct {
	Code      string
	SubStatus int
	Message   string
	// RetryAfter tells a throttled client (TooManyRequests) how long to wait
	// before retrying; zero for other errors.
	RetryAfter time.Duration
	// AdditionalInfo is a JSON document that Cosmos DB attaches to some
	// errors, sent as the error body's additionalErrorInfo: the query plan of
	// a cross-partition query its gateway cannot serve, say. Empty for most.
	AdditionalInfo string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns a domain error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, CodeInternal for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the client-safe message of err: the domain message for an
// *Error, and "Internal error." for anything else, whose text may leak internals.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}

// IsCode reports whether err carries the given domain code.
func IsCode(err error, code string) bool {
	return ErrorCode(err) == code
}
