//go:build !linux

package bench

import "syscall"

func childAttrs() *syscall.SysProcAttr { return nil }
