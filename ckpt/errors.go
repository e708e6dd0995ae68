package ckpt

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FormatError reports malformed input: a file that breaks a rule of the
// safetensors format, an index or a config. It names the file and, where
// they apply, the tensor and the absolute byte offset in that file.
type FormatError struct {
	File   string // path or URL of the file
	Tensor string // tensor name, if the error concerns one
	Offset int64  // absolute byte offset in File, or -1
	Reason string // what was expected and what was found
}

// Error is the message of the FormatError.
func (e *FormatError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Tensor != "" {
		fmt.Fprintf(&b, ": tensor %s", Quote(e.Tensor))
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, ": at byte %d", e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// ErrMalformed is matched (with errors.Is) by every *FormatError and by
// *UnknownDTypeError: the input could not be read as a valid checkpoint.
var ErrMalformed = errors.New("malformed checkpoint")

// Is makes errors.Is(err, ErrMalformed) true for format errors.
func (e *FormatError) Is(target error) bool { return target == ErrMalformed }

// UnknownDTypeError reports tensors whose dtype string is not in the
// safetensors table. The header that carries them is still returned, so that
// what could be read can be listed.
type UnknownDTypeError struct {
	File    string
	Tensors []string // names, in file order
	DTypes  []string // the unknown dtype of each, parallel to Tensors
}

// Error is the message of the UnknownDTypeError.
func (e *UnknownDTypeError) Error() string {
	parts := make([]string, 0, len(e.Tensors))
	for i, t := range e.Tensors {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Tensors)-5))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", Quote(t), Quote(e.DTypes[i])))
	}
	return fmt.Sprintf("%s: unknown dtype for %d tensor(s): %s", e.File, len(e.Tensors), strings.Join(parts, ", "))
}

// Is makes errors.Is(err, ErrMalformed) true.
func (e *UnknownDTypeError) Is(target error) bool { return target == ErrMalformed }

// ErrUsage is matched (with errors.Is) by every *UsageError: the request a
// workflow was given is itself wrong (a flag value, a combination of options,
// a glob that matches nothing), found before any work is done. The CLI maps it
// to exit 2, as it does unreadable input.
var ErrUsage = errors.New("invalid request")

// UsageError is a request a library workflow refuses before it starts: it
// says which option is wrong and why.
type UsageError struct {
	Option string // the option concerned, e.g. "--format" ("" when several)
	Reason string
}

// Error is the message of the UsageError.
func (e *UsageError) Error() string {
	if e.Option == "" {
		return e.Reason
	}
	return e.Option + ": " + e.Reason
}

// Is makes errors.Is(err, ErrUsage) true.
func (e *UsageError) Is(target error) bool { return target == ErrUsage }

// OptionError is the Options of a library workflow that it refuses before
// any work, for a caller other than the CLI (which checks its flags first,
// in its own words): Field names the field of Options. It matches ErrUsage.
type OptionError struct {
	Field, Reason string
}

// Error is the message of the OptionError.
func (e *OptionError) Error() string { return "Options." + e.Field + " " + e.Reason }

// Is makes errors.Is(err, ErrUsage) true.
func (e *OptionError) Is(target error) bool { return target == ErrUsage }

// Quote returns s in double quotes with control characters and invalid UTF-8
// escaped, so that hostile tensor names cannot corrupt a terminal.
func Quote(s string) string { return fmt.Sprintf("%q", s) }

// EscapeName returns s with control characters (C0, DEL, C1),
// bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
// U+061C), every other character Go does not print (strconv.IsPrint:
// format characters, unassigned code points, spaces other than ' ') and
// invalid UTF-8 escaped (Go syntax, as Quote writes them) but without
// surrounding quotes; s is returned as it is when nothing needs escaping.
// It is the one escaping of names and values for a terminal: a hostile
// tensor name cannot move the cursor, recolour the terminal or reorder
// the text around it.
func EscapeName(s string) string {
	for _, r := range s {
		if r == '\uFFFD' || !strconv.IsPrint(r) {
			q := Quote(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}

// NameList lists up to max names, escaped (EscapeName) and separated by
// ", ", with " and N more" for the rest: the list of a finding's message.
func NameList(ns []string, max int) string {
	var b strings.Builder
	for i, n := range ns {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(ns)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(EscapeName(n))
	}
	return b.String()
}

// Plural is n with the word one or many: "1 tensor", "3 tensors".
func Plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
