package pgtest

import "syscall"

// sysProcAttr runs postgres with cred, in a process group of its own (a ^C
// at the terminal reaches the test binary, which stops the server in order),
// and with a parent-death signal: if the test binary dies without stopping
// it (a panic, a timeout, SIGKILL), the kernel sends the postmaster SIGINT,
// a fast shutdown. The kernel sends it when the thread that started the
// process exits; Go keeps its threads for the life of the process unless a
// goroutine exits locked to one, which the callers of this package do not do.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGINT}
}
