//go:build !unix

package bench

import "time"

// selfCPU is unknown on this platform.
func selfCPU() time.Duration { return 0 }
