//go:build !linux

package pgtest

import "syscall"

// sysProcAttr runs postgres with cred, in a process group of its own. Without
// Linux's parent-death signal, a test binary that dies without stopping the
// server leaves it running: stop it with pg_ctl -D <dir>/data stop.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true}
}
