package ckpt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte size: a number (a fraction is allowed, "1.5G")
// followed by an optional unit. Decimal units are powers of 1000: K, M, G, T
// (also KB, MB, GB, TB); binary units are powers of 1024: Ki, Mi, Gi, Ti
// (also KiB, MiB, GiB, TiB); B or no unit is bytes. Units are
// case-insensitive, so "4G" is 4,000,000,000 bytes and "4Gi" 4,294,967,296.
// The result is rounded down to whole bytes; it is never negative. Every
// size flag of the command line (--min-mem, --max-shard-size) uses it.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || !ok {
		return 0, fmt.Errorf("invalid size %q (want a number of bytes with an optional unit: K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti powers of 1024, "+
			"e.g. 4G or 500MiB)", s)
	}
	v := math.Floor(f * mult)
	if v > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q: must be below 4 EiB", s)
	}
	return int64(v), nil
}

// sizeUnits are the multipliers of ParseSize's units (lower case).
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
	"ki": 1 << 10, "kib": 1 << 10, "mi": 1 << 20, "mib": 1 << 20, "gi": 1 << 30, "gib": 1 << 30, "ti": 1 << 40, "tib": 1 << 40,
}
