package extract

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseSize parses a byte size such as "2GB" (decimal units: KB, MB, GB,
// TB, also written K, M, G, T), "500MiB" (binary units: KiB, MiB, GiB, TiB)
// or a plain number of bytes. Units are case-insensitive and the number may
// have a fraction ("1.5GB"). The size must be positive.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]float64{
		"": 1, "b": 1,
		"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 {
		return 0, fmt.Errorf("invalid size %q (want a number of bytes or e.g. 2GB, 500MiB)", s)
	}
	v := math.Floor(f * mult)
	if v < 1 || v > math.MaxInt64/2 {
		return 0, fmt.Errorf("invalid size %q: must be at least 1 byte and below 4 EiB", s)
	}
	return int64(v), nil
}
