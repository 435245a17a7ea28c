package bench

import "syscall"

// childAttrs puts a child in its own process group (Ctrl-C in a terminal
// reaches only the benchmark, which stops its children in order) and has the
// kernel send it SIGTERM if the benchmark dies without stopping it.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
