package ckpt

import "strings"

// Redacted is what Redact writes in place of a URL's password (or of its
// user name when the userinfo has no password: a token given as user name,
// https://TOKEN@host/, is a credential too).
const Redacted = "xxxxx"

// Redact returns s with the credentials of every URL in it removed: the
// userinfo of scheme://USER:PASSWORD@host becomes USER:xxxxx@, that of
// scheme://USER@host becomes xxxxx@. It is the one redaction of ckpt: a
// source's name is made with it (Checkpoint.Source, the locations of the
// HTTP stores, the messages that quote a source), so everything written
// from a name — reports, JSON, contracts, cache manifests, archives,
// errors — carries no password. Text without "://" is returned unchanged;
// s need not be a valid URL (a source that fails to parse is still
// redacted in the message that says so).
func Redact(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	rest := s
	for {
		i := strings.Index(rest, "://")
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		// The scheme: letters, digits, '+', '-', '.', starting with a
		// letter, right before "://".
		j := i
		for j > 0 && isSchemeByte(rest[j-1]) {
			j--
		}
		for j < i && !isLetter(rest[j]) {
			j++
		}
		start := i + 3
		b.WriteString(rest[:start])
		rest = rest[start:]
		if j == i {
			continue // no scheme: not a URL
		}
		// The authority runs to the first '/', '?', '#' or space; its
		// userinfo to the last '@' inside it.
		end := strings.IndexAny(rest, "/?# \t\r\n\"'")
		if end < 0 {
			end = len(rest)
		}
		auth := rest[:end]
		at := strings.LastIndexByte(auth, '@')
		if at < 0 {
			continue
		}
		if user, _, ok := strings.Cut(auth[:at], ":"); ok {
			b.WriteString(user + ":" + Redacted)
		} else {
			b.WriteString(Redacted)
		}
		rest = rest[at:]
	}
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isSchemeByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
