package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes parseSize accepts, longest first so that "MiB"
// is not read as "B" after "Mi".
var sizeUnits = []struct {
	suffix string
	bytes  int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// parseSize reads a size in bytes: a whole number with an optional unit,
// decimal (KB, MB, GB, TB) or binary (KiB, MiB, GiB, TiB; K, M, G and T are
// binary too), case-insensitive, as in "512MiB", "10GB" or "1048576".
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.bytes
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size in bytes (like 512MiB or 10GB)", s)
	}
	if n > 0 && mult > (1<<62)/n {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}
