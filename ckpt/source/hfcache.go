package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Repo names a model repository and a revision.
type Repo struct {
	ID       string // "ORG/NAME" (or "NAME")
	Revision string // branch, tag or 40-hex commit; "" means main
}

// rev is the revision, "main" when unset.
func (r Repo) rev() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

// String is "ORG/NAME@REV".
func (r Repo) String() string { return r.ID + "@" + r.rev() }

// parseRepo parses "ORG/NAME[@REV]".
func parseRepo(s string) (Repo, error) {
	id, rev, _ := strings.Cut(s, "@")
	r := Repo{ID: id, Revision: rev}
	parts := strings.Split(id, "/")
	if id == "" || len(parts) > 2 {
		return r, fmt.Errorf("repository %s: want ORG/NAME[@REV]", ckpt.Quote(s))
	}
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || strings.ContainsAny(p, "\\:\x00") || strings.HasPrefix(p, "-") {
			return r, fmt.Errorf("repository %s: %s is not a valid name (want ORG/NAME[@REV])", ckpt.Quote(s), ckpt.Quote(p))
		}
		for _, c := range p {
			if c < 0x20 || c == 0x7f {
				return r, fmt.Errorf("repository %s: name contains control characters", ckpt.Quote(s))
			}
		}
	}
	if strings.Contains(s, "@") {
		if err := ckpt.CheckName(rev); err != nil {
			return r, fmt.Errorf("repository %s: revision: %w", ckpt.Quote(s), err)
		}
	}
	return r, nil
}

// hfCacheRoot returns the Hugging Face hub cache directory: $HF_HUB_CACHE,
// else $HF_HOME/hub, else ~/.cache/huggingface/hub (the home directory from
// $HOME).
func hfCacheRoot(getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if d := getenv("HF_HUB_CACHE"); d != "" {
		return expandHome(d, getenv), nil
	}
	if d := getenv("HF_HOME"); d != "" {
		return filepath.Join(expandHome(d, getenv), "hub"), nil
	}
	home := getenv("HOME")
	if home == "" {
		home = getenv("USERPROFILE")
	}
	if home == "" {
		return "", errors.New("cannot locate the Hugging Face cache: HF_HUB_CACHE, HF_HOME and HOME are all unset")
	}
	return filepath.Join(home, ".cache", "huggingface", "hub"), nil
}

func expandHome(p string, getenv func(string) string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

// RepoFolder is the cache folder name of a model repository:
// models--ORG--NAME.
func RepoFolder(id string) string {
	return "models--" + strings.ReplaceAll(id, "/", "--")
}

// cacheStore is a ckpt.Store over one snapshot of a repository in the local
// Hugging Face cache. Every file is opened through an os.Root on the
// repository folder, so a snapshot link may lead into ../../blobs/ but
// nothing can escape models--ORG--NAME.
type cacheStore struct {
	repo     Repo
	repoDir  string // …/models--ORG--NAME
	commit   string
	root     *os.Root
	snapshot string // "snapshots/<commit>" inside root
	pool     *ckpt.FilePool
}

// openCache resolves repo in the cache rooted at cacheRoot (see hfCacheRoot):
// refs/<rev> gives the commit unless rev is already a 40-hex commit.
func openCache(cacheRoot string, repo Repo) (*cacheStore, error) {
	repoDir := filepath.Join(cacheRoot, RepoFolder(repo.ID))
	st, err := os.Stat(repoDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &CacheMissError{Repo: repo, Reason: fmt.Sprintf("not in the Hugging Face cache %s (no %s)", cacheRoot, RepoFolder(repo.ID))}
		}
		return nil, fmt.Errorf("hf:%s: %w", repo.ID, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("hf:%s: %s is not a directory", repo.ID, repoDir)
	}
	root, err := os.OpenRoot(repoDir)
	if err != nil {
		return nil, fmt.Errorf("hf:%s: opening %s: %w", repo.ID, repoDir, err)
	}
	commit, err := resolveRev(root, repoDir, repo)
	if err != nil {
		root.Close()
		return nil, err
	}
	s := &cacheStore{repo: repo, repoDir: repoDir, commit: commit, root: root, snapshot: "snapshots/" + commit, pool: ckpt.NewFilePool(0)}
	if st, err := root.Stat(s.snapshot); err != nil || !st.IsDir() {
		root.Close()
		return nil, &CacheMissError{Repo: repo, Reason: fmt.Sprintf("revision %s is commit %s, but %s has no snapshot of it", repo.rev(), commit, repoDir)}
	}
	return s, nil
}

func isCommit(s string) bool { return len(s) == 40 && isHex(s) }

func resolveRev(root *os.Root, repoDir string, repo Repo) (string, error) {
	rev := repo.rev()
	if isCommit(rev) {
		if _, err := root.Stat("snapshots/" + rev); err == nil {
			return rev, nil
		}
	}
	if err := ckpt.CheckName(rev); err != nil {
		return "", fmt.Errorf("hf:%s: revision: %w", repo.ID, err)
	}
	f, err := root.Open(filepath.FromSlash("refs/" + rev))
	if err != nil {
		if isCommit(rev) {
			return "", &CacheMissError{Repo: repo, Reason: fmt.Sprintf("commit %s has no snapshot in %s", rev, repoDir)}
		}
		if isHexPrefix(rev) {
			c, err := snapshotByPrefix(root, repo, rev)
			if err == nil {
				return c, nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
		}
		refs := listRefs(root)
		return "", &CacheMissError{Repo: repo, Reason: fmt.Sprintf("no ref or snapshot %s in %s (refs: %s)", ckpt.Quote(rev), repoDir, strings.Join(refs, ", "))}
	}
	defer f.Close()
	buf := make([]byte, 128)
	n, _ := f.Read(buf)
	commit := strings.TrimSpace(string(buf[:n]))
	if !isCommit(commit) {
		return "", fmt.Errorf("hf:%s: %s does not hold a 40-hex commit hash (found %s)",
			repo.ID, filepath.Join(repoDir, "refs", filepath.FromSlash(rev)), ckpt.Quote(commit))
	}
	return commit, nil
}

func listRefs(root *os.Root) []string {
	var out []string
	fs.WalkDir(root.FS(), "refs", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimPrefix(p, "refs/"))
		}
		return nil
	})
	if len(out) == 0 {
		return []string{"none"}
	}
	sort.Strings(out)
	return out
}

// Commit is the snapshot's commit hash.
func (s *cacheStore) Commit() string { return s.commit }

// Dir is the snapshot directory.
func (s *cacheStore) Dir() string {
	return filepath.Join(s.repoDir, filepath.FromSlash(s.snapshot))
}

// Close releases the repository folder.
func (s *cacheStore) Close() error { return s.root.Close() }

// Location is the file's path in the snapshot.
func (s *cacheStore) Location(name string) string {
	return filepath.Join(s.Dir(), filepath.FromSlash(name))
}

// Open opens a file of the snapshot. A file whose download has not finished
// yields a *PartialError, which matches fs.ErrNotExist.
func (s *cacheStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ckpt.CheckName(name); err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.Location(name), err)
	}
	rel := filepath.FromSlash(s.snapshot + "/" + name)
	loc := s.Location(name)
	b, err := ckpt.NewPooledFileBlob(s.pool, func() (*os.File, error) { return s.root.Open(rel) }, loc)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if pe := s.partial(name); pe != nil {
				return nil, pe
			}
		}
		var fe *ckpt.FormatError
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, fmt.Errorf("opening %s: %w", loc, err)
	}
	return b, nil
}

// List lists the files at the top of the snapshot (links included).
func (s *cacheStore) List(ctx context.Context) ([]string, error) {
	ents, err := fs.ReadDir(s.root.FS(), s.snapshot)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.Dir(), err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// blobOf returns the blob name a snapshot link points to ("" for a real
// file or a link that does not point into blobs/).
func (s *cacheStore) blobOf(name string) string {
	target, err := s.root.Readlink(filepath.FromSlash(s.snapshot + "/" + name))
	if err != nil {
		return ""
	}
	target = filepath.ToSlash(target)
	if path.IsAbs(target) {
		// An absolute link is only acceptable into our own blobs/.
		rel, err := filepath.Rel(filepath.Join(s.repoDir, "blobs"), filepath.FromSlash(target))
		if err != nil || strings.Contains(filepath.ToSlash(rel), "/") || rel == ".." {
			return ""
		}
		return rel
	}
	full := path.Clean(path.Join(path.Dir(s.snapshot+"/"+name), target))
	dir, base := path.Split(full)
	if dir != "blobs/" {
		return ""
	}
	return base
}

// ExpectedSHA256 returns the SHA-256 a file must have: the name of the LFS
// blob its snapshot link points to (64 hex digits). Regular (non-LFS) files
// are named by their git SHA-1, and degraded caches hold real files: both
// report false.
func (s *cacheStore) ExpectedSHA256(name string) (string, bool) {
	if ckpt.CheckName(name) != nil {
		return "", false
	}
	b := s.blobOf(name)
	if len(b) != 64 {
		return "", false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return b, true
}

// PartialError says that a file of a cache snapshot has not been fully
// downloaded. It matches fs.ErrNotExist.
type PartialError struct {
	Name       string // file name in the snapshot
	Location   string // its path
	Blob       string // blob it links to, "" when unknown
	Incomplete int64  // bytes in blobs/<blob>.incomplete, -1 if none
	InProgress []string
	Repo       Repo // the repository and revision, for the download command
}

// Error is the message of the PartialError.
func (e *PartialError) Error() string {
	var detail string
	switch {
	case e.Blob != "" && e.Incomplete >= 0:
		detail = fmt.Sprintf("its blob is still downloading (blobs/%s.incomplete, %d bytes so far)", e.Blob, e.Incomplete)
	case e.Blob != "":
		detail = fmt.Sprintf("the snapshot links it to blobs/%s, which is missing", e.Blob)
	default:
		detail = fmt.Sprintf("it is not in the snapshot yet and %d download(s) are in progress (blobs/%s)", len(e.InProgress), strings.Join(e.InProgress, ", blobs/"))
	}
	rev := ""
	if e.Repo.Revision != "" {
		rev = " --revision " + e.Repo.Revision
	}
	return fmt.Sprintf("opening %s: partial download of %s: %s; fetch it again with `hf download %s %s%s`", e.Location, e.Name, detail, e.Repo.ID, e.Name, rev)
}

// Unwrap makes a partial download match fs.ErrNotExist.
func (e *PartialError) Unwrap() error { return fs.ErrNotExist }

func (s *cacheStore) incompleteBlobs() map[string]int64 {
	out := map[string]int64{}
	ents, err := fs.ReadDir(s.root.FS(), "blobs")
	if err != nil {
		return out
	}
	for _, e := range ents {
		if b, ok := strings.CutSuffix(e.Name(), ".incomplete"); ok && !e.IsDir() {
			var n int64
			if info, err := e.Info(); err == nil {
				n = info.Size()
			}
			out[b] = n
		}
	}
	return out
}

// partial explains why name cannot be opened when that is a download in
// progress; nil otherwise.
func (s *cacheStore) partial(name string) *PartialError {
	pe := &PartialError{Name: name, Location: s.Location(name), Incomplete: -1, Repo: Repo{ID: s.repo.ID, Revision: s.commit}}
	inc := s.incompleteBlobs()
	if b := s.blobOf(name); b != "" {
		if _, err := s.root.Stat("blobs/" + b); err == nil {
			return nil // the blob is there: some other problem
		}
		pe.Blob = b
		if n, ok := inc[b]; ok {
			pe.Incomplete = n
		}
		return pe
	}
	if _, err := s.root.Lstat(filepath.FromSlash(s.snapshot + "/" + name)); err == nil {
		return nil // a real file or a link elsewhere: not a partial download
	}
	linked := s.linkedBlobs()
	for b := range inc {
		if !linked[b] {
			pe.InProgress = append(pe.InProgress, b+".incomplete")
		}
	}
	if len(pe.InProgress) == 0 {
		return nil
	}
	sort.Strings(pe.InProgress)
	return pe
}

// linkedBlobs lists the blobs the snapshot links to.
func (s *cacheStore) linkedBlobs() map[string]bool {
	out := map[string]bool{}
	fs.WalkDir(s.root.FS(), s.snapshot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			if b := s.blobOf(strings.TrimPrefix(p, s.snapshot+"/")); b != "" {
				out[b] = true
			}
		}
		return nil
	})
	return out
}

// Partial lists the snapshot's files whose download is incomplete: links to
// a missing blob (named by the file), and downloads in progress that no
// file links to yet (named "blobs/<etag>.incomplete").
func (s *cacheStore) Partial(ctx context.Context) ([]string, error) {
	var out []string
	linked := map[string]bool{}
	err := fs.WalkDir(s.root.FS(), s.snapshot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		name := strings.TrimPrefix(p, s.snapshot+"/")
		b := s.blobOf(name)
		if b == "" {
			return nil // not a link into blobs/: opening it reports the problem
		}
		linked[b] = true
		if _, err := s.root.Stat("blobs/" + b); err != nil {
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.Dir(), err)
	}
	var orphans []string
	for b := range s.incompleteBlobs() {
		if !linked[b] {
			orphans = append(orphans, "blobs/"+b+".incomplete")
		}
	}
	sort.Slice(out, func(i, j int) bool { return ckpt.NaturalLess(out[i], out[j]) })
	sort.Strings(orphans)
	return append(out, orphans...), nil
}

var (
	_ ckpt.Store        = (*cacheStore)(nil)
	_ ckpt.PartialStore = (*cacheStore)(nil)
	_ ckpt.DigestStore  = (*cacheStore)(nil)
)
