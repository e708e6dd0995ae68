// Package jsonval reads the loosely typed values of a decoded JSON
// document (config.json, an index, a quantization_config: the
// map[string]any and []any that encoding/json gives): an integer that may
// be written as a float or a string, a list of strings or integers with
// elements of other types skipped. It is the one home of these
// conversions for the reader (package ckpt) and for the packages below it
// (ckpt/quant).
package jsonval

import (
	"encoding/json"
	"strconv"
)

// Int converts a JSON number (json.Number, float64, int, int64) or a
// numeric string to int64; false for anything else, or a number with a
// fraction.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil || f != float64(int64(f)) {
				return 0, false
			}
			return int64(f), true
		}
		return n, true
	case float64:
		if x != float64(int64(x)) {
			return 0, false
		}
		return int64(x), true
	case int:
		return int64(x), true
	case int64:
		return x, true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// Strings converts a JSON array of strings; other elements are skipped,
// and a value that is no array gives nil.
func Strings(v any) []string {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Ints converts a JSON array of integers (Int); other elements are
// skipped, and a value that is no array gives nil.
func Ints(v any) []int64 {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]int64, 0, len(arr))
	for _, e := range arr {
		if n, ok := Int(e); ok {
			out = append(out, n)
		}
	}
	return out
}
