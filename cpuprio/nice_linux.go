package cpuprio

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// setThreadNice sets the nice value of the calling OS thread only: on Linux,
// setpriority with PRIO_PROCESS and a thread id applies to that thread.
func setThreadNice(nice int) error {
	if err := unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), nice); err != nil {
		return fmt.Errorf("cpuprio: setpriority: %w", err)
	}
	return nil
}

// threadNice returns the nice value of the calling OS thread.
func threadNice() (int, error) {
	// The raw system call returns 20 - nice, so that it is never negative.
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		return 0, fmt.Errorf("cpuprio: getpriority: %w", err)
	}
	return 20 - p, nil
}
