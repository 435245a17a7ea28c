//go:build !linux

package cpuprio

import "errors"

var errUnsupported = errors.New("cpuprio: per-thread priorities are supported on Linux only")

func setThreadNice(int) error { return errUnsupported }

func threadNice() (int, error) { return 0, errUnsupported }
