package cache

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemAvailable returns MemAvailable in bytes from a /proc/meminfo-format
// file at path.
func MemAvailable(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("reading available memory: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "MemAvailable" {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			break
		}
		n, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("reading available memory from %s: bad MemAvailable %q", path, strings.TrimSpace(v))
		}
		mul := int64(1)
		if len(fs) > 1 {
			switch strings.ToLower(fs[1]) {
			case "kb":
				mul = 1024
			case "mb":
				mul = 1 << 20
			case "b":
			default:
				return 0, fmt.Errorf("reading available memory from %s: unknown unit %q", path, fs[1])
			}
		}
		return n * mul, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading available memory from %s: %w", path, err)
	}
	return 0, fmt.Errorf("reading available memory from %s: no MemAvailable line", path)
}

// ParseBytes parses a size such as "4GiB", "512MiB", "4G", "1.5GB" or
// "1048576" (bytes). Binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB,
// TB) suffixes are accepted; single letters K, M, G, T are binary.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional unit, e.g. 4GiB", s)
	}
	mul := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1e3, "m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9, "t": 1 << 40, "tib": 1 << 40, "tb": 1e12}
	m, ok := mul[unit]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q", s, t[i:])
	}
	if v*m > 1<<62 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v * m), nil
}
