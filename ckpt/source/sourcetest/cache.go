package sourcetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/source"
)

// CacheRepo is a repository written into a Hugging Face cache tree.
type CacheRepo struct {
	Dir      string // …/models--ORG--NAME
	Commit   string
	Snapshot string            // …/snapshots/<commit>
	Blobs    map[string]string // file name → blob name
}

// WriteCache copies the files of src (recursively) into the cache rooted
// at cacheRoot as repository id at commit, the way huggingface_hub does:
// blobs/<sha256>, snapshots/<commit>/<path> as relative symlinks to
// ../../blobs/<sha256> (more ../ for deeper paths), and refs/main. With
// degraded set, the snapshot holds real files instead of links.
func WriteCache(cacheRoot, id, commit, src string, degraded bool) (*CacheRepo, error) {
	repoDir := filepath.Join(cacheRoot, source.RepoFolder(id))
	r := &CacheRepo{Dir: repoDir, Commit: commit, Snapshot: filepath.Join(repoDir, "snapshots", commit), Blobs: map[string]string{}}
	for _, d := range []string{"blobs", "refs", filepath.Join("snapshots", commit)} {
		if err := os.MkdirAll(filepath.Join(repoDir, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(commit), 0o644); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		blob, err := sha256File(p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		r.Blobs[name] = blob
		dst := filepath.Join(r.Snapshot, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if degraded {
			return copyFile(p, dst)
		}
		if err := copyFile(p, filepath.Join(repoDir, "blobs", blob)); err != nil {
			return err
		}
		up := strings.Repeat("../", strings.Count(name, "/")+2)
		return os.Symlink(up+"blobs/"+blob, dst)
	})
	if err != nil {
		return nil, fmt.Errorf("writing cache tree for %s: %w", id, err)
	}
	return r, nil
}

// MakeIncomplete turns the blob of file name into a download in progress:
// blobs/<sha>.incomplete holding its first half, with the snapshot link
// removed when unlink is set (huggingface_hub links only after the download
// completes) or left dangling otherwise.
func (r *CacheRepo) MakeIncomplete(name string, unlink bool) error {
	blob := filepath.Join(r.Dir, "blobs", r.Blobs[name])
	data, err := os.ReadFile(blob)
	if err != nil {
		return err
	}
	if err := os.WriteFile(blob+".incomplete", data[:len(data)/2], 0o644); err != nil {
		return err
	}
	if err := os.Remove(blob); err != nil {
		return err
	}
	if unlink {
		return os.Remove(filepath.Join(r.Snapshot, filepath.FromSlash(name)))
	}
	return nil
}

func sha256File(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
