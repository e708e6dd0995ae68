package check

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memAvailable returns MemAvailable in bytes from a /proc/meminfo-format
// file at path.
func memAvailable(path string) (int64, error) {
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
