package ckpt

import "strings"

// Redacted is what Redact writes in place of a URL's password (or of its
// user name when the userinfo has no password: a token given as user name,
// https://TOKEN@host/, is a credential too) and of its query.
const Redacted = "xxxxx"

// Redact returns s with the credentials of every URL in it removed: the
// userinfo of scheme://USER:PASSWORD@host becomes USER:xxxxx@, that of
// scheme://USER@host becomes xxxxx@, and the query (everything from '?' to
// the fragment, a space or a quote) becomes ?xxxxx: a signed URL's query
// (a hub's redirect to its CDN: X-Amz-Signature, Signature and Key-Pair-Id,
// token, Expires) is a credential, and whoever holds it may read the file
// until it expires. The scheme, host and path stay, so the text still
// names the file. It is the one redaction of ckpt: a source's name is
// made with it (Checkpoint.Source, the locations of the HTTP stores, the
// URLs of their errors, retries and request logs, the messages that quote
// a source), so everything written from a name — reports, JSON,
// contracts, cache manifests, archives, errors — carries no password and
// no signature. Text without "://" is returned unchanged; s need not be a
// valid URL (a source that fails to parse is still redacted in the message
// that says so).
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
		if at := strings.LastIndexByte(auth, '@'); at >= 0 {
			if user, _, ok := strings.Cut(auth[:at], ":"); ok {
				b.WriteString(user + ":" + Redacted)
			} else {
				b.WriteString(Redacted)
			}
			rest = rest[at:]
			end -= at
		}
		// The path runs to '?', '#' or a space; the query from '?' to '#'
		// or a space. A path that holds another URL leaves the query to
		// it (the next round).
		p := strings.IndexAny(rest[end:], "?# \t\r\n\"'")
		if p < 0 || rest[end+p] != '?' || strings.Contains(rest[end:end+p], "://") {
			continue
		}
		q := end + p + 1
		b.WriteString(rest[:q])
		rest = rest[q:]
		qend := strings.IndexAny(rest, "# \t\r\n\"'")
		if qend < 0 {
			qend = len(rest)
		}
		if qend > 0 {
			b.WriteString(Redacted)
			rest = rest[qend:]
		}
	}
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isSchemeByte(c byte) bool {
	return isLetter(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
