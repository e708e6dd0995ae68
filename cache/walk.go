package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/mapping"
)

// WalkFollow walks the tree under dir in lexical order, like
// filepath.WalkDir, but follows symbolic links: a link to a directory is
// walked as the directory (a cache folder, or a sub-folder of one, may be
// a link to storage elsewhere), a link to a file is passed as a file (also
// when it dangles: opening it tells). fn gets each path below dir and
// whether it is a directory; returning filepath.SkipDir for a directory
// skips it. A link back to a directory being walked is an error (a cycle).
func WalkFollow(dir string, fn func(p string, isDir bool) error) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	return walkDir(dir, fn, []os.FileInfo{st})
}

func walkDir(dir string, fn func(p string, isDir bool) error, stack []os.FileInfo) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		isDir := e.IsDir()
		var st os.FileInfo
		if e.Type()&os.ModeSymlink != 0 {
			if t, err := os.Stat(p); err == nil && t.IsDir() {
				isDir, st = true, t
			}
		}
		if err := fn(p, isDir); err != nil {
			if err == filepath.SkipDir && isDir {
				continue
			}
			return err
		}
		if !isDir {
			continue
		}
		if st == nil {
			if st, err = os.Stat(p); err != nil {
				return err
			}
		}
		for _, s := range stack {
			if os.SameFile(s, st) {
				return fmt.Errorf("%s: symbolic link cycle (it leads back to a directory being listed)", p)
			}
		}
		if err := walkDir(p, fn, append(stack, st)); err != nil {
			return err
		}
	}
	return nil
}

// TensorbinFiles lists the .tensorbin files under dir (temporary files of
// an interrupted build excepted) as sorted slash-separated relative paths,
// following symbolic links to folders and files (WalkFollow).
func TensorbinFiles(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading cache directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("reading cache directory %s: not a directory", dir)
	}
	var out []string
	err = WalkFollow(dir, func(p string, isDir bool) error {
		name := filepath.Base(p)
		if isDir || !strings.HasSuffix(name, mapping.FileExt) || IsTempName(name) {
			return nil
		}
		out = append(out, RelPath(dir, p))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	sort.Strings(out)
	return out, nil
}

// RelPath is p relative to root, slash-separated (p itself when it is not
// under root).
func RelPath(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}
