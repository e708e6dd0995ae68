package source

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Hugging Face conventions: where the token is, offline mode, short commit
// hashes, file paths after the repository, and words for a cache miss.

// hubTokenFrom returns the hub token the way huggingface_hub finds it:
// $HF_TOKEN, else the file $HF_TOKEN_PATH, else $HF_HOME/token (HF_HOME
// defaulting to ~/.cache/huggingface), the file `hf auth login` (huggingface_hub's
// CLI) writes ("" when there is none), with where it came from, for messages:
// "HF_TOKEN", "the file HF_TOKEN_PATH (PATH)", "the file $HF_HOME/token
// (PATH)" or "the file ~/.cache/huggingface/token (PATH)"; "" when there
// is no token.
func hubTokenFrom(getenv func(string) string) (token, from string) {
	if getenv == nil {
		return "", ""
	}
	if t := strings.TrimSpace(getenv("HF_TOKEN")); t != "" {
		return t, "HF_TOKEN"
	}
	p, what := getenv("HF_TOKEN_PATH"), "HF_TOKEN_PATH"
	if p == "" {
		home := getenv("HF_HOME")
		what = "$HF_HOME/token"
		if home == "" {
			h := getenv("HOME")
			if h == "" {
				return "", ""
			}
			home = filepath.Join(h, ".cache", "huggingface")
			what = "~/.cache/huggingface/token"
		}
		p = filepath.Join(expandHome(home, getenv), "token")
	}
	p = expandHome(p, getenv)
	b, err := os.ReadFile(p)
	if err != nil {
		return "", ""
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", ""
	}
	return t, fmt.Sprintf("the file %s (%s)", what, p)
}

// isOffline reports HF_HUB_OFFLINE set to 1, true, yes or on (any case):
// no network access at all.
func isOffline(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("HF_HUB_OFFLINE"))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// OfflineError refuses a network source under HF_HUB_OFFLINE.
type OfflineError struct {
	Source string
	Repo   *Repo // the repository of an hf:// source, nil for a URL
}

// Error is the message of the OfflineError.
func (e *OfflineError) Error() string {
	msg := fmt.Sprintf("source %s: HF_HUB_OFFLINE is set: no network access", ckpt.Quote(e.Source))
	if e.Repo != nil {
		msg += fmt.Sprintf("; read the local cache instead: hf:%s", e.Repo.ID)
		if e.Repo.Revision != "" {
			msg += "@" + e.Repo.Revision
		}
	}
	return msg
}

// parseRepoPath parses "ORG/NAME[@REV][/FILE]" where FILE, a path ending
// in .safetensors or .json, names the file to open in the repository.
func parseRepoPath(s string) (Repo, string, error) {
	head, entry := s, ""
	if at := strings.IndexByte(s, '@'); at >= 0 {
		if i := strings.IndexByte(s[at:], '/'); i >= 0 {
			head, entry = s[:at+i], s[at+i+1:]
		}
	} else if parts := strings.SplitN(s, "/", 3); len(parts) == 3 && isEntryName(parts[2]) {
		head, entry = parts[0]+"/"+parts[1], parts[2]
	}
	r, err := parseRepo(head)
	if err != nil {
		return r, "", err
	}
	if entry != "" {
		if !isEntryName(entry) {
			return r, "", fmt.Errorf("repository %s: %s is not a .safetensors file or an index .json", ckpt.Quote(s), ckpt.Quote(entry))
		}
		if err := ckpt.CheckName(entry); err != nil {
			return r, "", fmt.Errorf("repository %s: file: %w", ckpt.Quote(s), err)
		}
	}
	return r, entry, nil
}

func isEntryName(p string) bool {
	return strings.HasSuffix(p, ".safetensors") || strings.HasSuffix(p, ".json")
}

// CacheMissError says a repository or revision is not in the local cache,
// and how to get it. It matches fs.ErrNotExist.
type CacheMissError struct {
	Repo   Repo
	Reason string // what is missing
}

// Error is the message of the CacheMissError.
func (e *CacheMissError) Error() string {
	rev := ""
	if e.Repo.Revision != "" {
		rev = " --revision " + e.Repo.Revision
	}
	at := ""
	if e.Repo.Revision != "" {
		at = "@" + e.Repo.Revision
	}
	return fmt.Sprintf("hf:%s: %s; download it with `hf download %s%s`, or read it from the hub without downloading: hf://%s%s",
		e.Repo.ID, e.Reason, e.Repo.ID, rev, e.Repo.ID, at)
}

// Unwrap makes a cache miss match fs.ErrNotExist.
func (e *CacheMissError) Unwrap() error { return fs.ErrNotExist }

// isHexPrefix reports a possible short commit hash (4 to 39 hex digits).
func isHexPrefix(s string) bool { return len(s) >= 4 && len(s) < 40 && isHex(s) }

// isHex reports lower-case hex digits only.
func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// snapshotByPrefix resolves a short commit hash to the one snapshot whose
// commit starts with it.
func snapshotByPrefix(root *os.Root, repo Repo, prefix string) (string, error) {
	ents, err := fs.ReadDir(root.FS(), "snapshots")
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range ents {
		if e.IsDir() && isCommit(e.Name()) && strings.HasPrefix(e.Name(), prefix) {
			found = append(found, e.Name())
		}
	}
	sort.Strings(found)
	switch len(found) {
	case 0:
		return "", fs.ErrNotExist
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("hf:%s: short commit %s matches %d snapshots (%s): give more digits", repo.ID, prefix, len(found), strings.Join(found, ", "))
}

// repoFolderID returns ORG/NAME for a models--ORG--NAME folder name.
func repoFolderID(folder string) (string, bool) {
	rest, ok := strings.CutPrefix(folder, "models--")
	if !ok || rest == "" {
		return "", false
	}
	org, name, ok := strings.Cut(rest, "--")
	if !ok {
		return rest, true
	}
	return org + "/" + name, true
}

// isRepoFolder reports a models--ORG--NAME folder with a snapshots/
// directory.
func isRepoFolder(dir string) (string, bool) {
	id, ok := repoFolderID(filepath.Base(dir))
	if !ok {
		return "", false
	}
	if st, err := os.Stat(filepath.Join(dir, "snapshots")); err != nil || !st.IsDir() {
		return "", false
	}
	return id, true
}
