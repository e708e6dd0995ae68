package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// prepare creates the folder if needed, takes its lock, removes staging
// folders that an unpack which died left and makes the staging folder
// beside the folder. A folder that is, through links, one of the folders
// prepared before (the other folder of a vision model), inside it, or
// holds it is refused before it is locked: swapping one would carry the
// other away.
func (p *part) prepare(before []*part) error {
	st, err := os.Lstat(p.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := p.mkdirs(filepath.Dir(p.path)); err != nil {
			return err
		}
		switch err := os.Mkdir(p.path, 0o755); {
		case err == nil:
			p.created = append(p.created, p.path)
		case !errors.Is(err, fs.ErrExist): // else made meanwhile: the lock decides
			return &atomicfile.WriteError{Op: "creating cache folder", Path: p.path, Err: err}
		}
	case err != nil:
		return &atomicfile.WriteError{Op: "opening cache folder", Path: p.path, Err: err}
	case st.Mode()&fs.ModeSymlink == 0 && !st.IsDir():
		return &atomicfile.WriteError{Op: "unpacking", Path: p.path, Err: errors.New("exists and is not a directory")}
	}
	real, err := filepath.EvalSymlinks(p.path)
	if err != nil {
		return &atomicfile.WriteError{Op: "opening cache folder", Path: p.path, Err: err}
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return &atomicfile.WriteError{Op: "unpacking", Path: p.path, Err: errors.New("is a link to something that is not a directory")}
	}
	p.real = real
	for _, q := range before {
		if q.real == real || strings.HasPrefix(real, q.real+string(filepath.Separator)) || strings.HasPrefix(q.real, real+string(filepath.Separator)) {
			return &ckpt.RefusedOutputError{RefusedError: &atomicfile.RefusedError{Flag: "-o", Path: p.path,
				Reason: fmt.Sprintf("is %s through links, and %s is %s: the model's two folders must be two directories, neither inside the other", real, q.path, q.real)}}
		}
	}
	if p.lock, err = cache.LockFolder(real); err != nil {
		return err
	}
	parent, base := filepath.Dir(real), filepath.Base(real)
	prefix := ".unpack-" + base + "-"
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			// Ours while we hold the folder's lock: an unpack stages only
			// under it, so these are left by one that died. Only the
			// prefix and os.MkdirTemp's decimal suffix: the staging folder
			// of a folder whose name continues this one's (a tag with a
			// dash) is another unpack's.
			if n := strings.TrimPrefix(e.Name(), prefix); e.IsDir() && n != e.Name() && allDigits(n) {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
	if p.stage, err = os.MkdirTemp(parent, prefix); err != nil {
		return &atomicfile.WriteError{Op: "creating staging folder", Path: parent, Err: err}
	}
	if p.root, err = os.OpenRoot(p.stage); err != nil {
		return &atomicfile.WriteError{Op: "opening staging folder", Path: p.stage, Err: err}
	}
	p.dirs = map[string]bool{".": true}
	return nil
}

// mkdirs creates dir and its missing parents, recording which it created.
func (p *part) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		switch err := os.Mkdir(missing[i], 0o755); {
		case err == nil:
			p.created = append(p.created, missing[i])
		case !errors.Is(err, fs.ErrExist): // else made meanwhile, or a link: not ours to remove
			return &atomicfile.WriteError{Op: "creating", Path: missing[i], Err: err}
		}
	}
	return nil
}

// undo removes the staging folder, releases the locks and removes the
// directories this unpack created (empty again by then).
func (p *part) undo() {
	if p.root != nil {
		p.root.Close()
	}
	p.stageLock.Release()
	if p.stage != "" {
		os.RemoveAll(p.stage)
	}
	p.lock.Release()
	for i := len(p.created) - 1; i >= 0; i-- {
		os.Remove(p.created[i])
	}
}

// extractAll writes every entry into its folder's staging folder and
// checks that every file the manifests list came.
func (u *unpacker) extractAll(ctx context.Context, tr *tar.Reader) error {
	manifests := 0
	if !u.legacy {
		manifests = 1 // readManifest consumed it
	}
	for !u.eof {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := u.pending
		u.pending = nil
		if h == nil {
			var err error
			h, err = tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return asBad("", err)
			}
		}
		if h.Name == cache.ManifestName {
			manifests++
			if manifests > 1 {
				return bad(h.Name, "appears twice")
			}
			b, err := io.ReadAll(io.LimitReader(tr, maxManifestBytes+1))
			if err != nil {
				return asBad(h.Name, err)
			}
			if !bytes.Equal(b, u.mb) {
				return bad(h.Name, "differs from the manifest read before")
			}
			continue
		}
		if h.Name == u.companionEntry {
			return bad(h.Name, "appears twice")
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
	var lacking []string
	for _, p := range u.parts {
		for _, f := range p.m.Files {
			if !u.seen[f.Path] {
				lacking = append(lacking, f.Path)
			}
		}
	}
	if len(lacking) > 0 {
		more := ""
		if len(lacking) > 1 {
			more = fmt.Sprintf(" and %d more", len(lacking)-1)
		}
		return bad("", "it lacks %s%s, which the manifest lists (truncated?)", strconv.Quote(lacking[0]), more)
	}
	return nil
}

// entry checks one tar entry against the manifests and writes it into its
// folder's staging folder: its name, type and declared size first, then
// its header, before any of its data is written; its hashes after.
func (u *unpacker) entry(h *tar.Header, tr *tar.Reader) error {
	name := h.Name
	if h.Typeflag == tar.TypeDir {
		d := strings.TrimSuffix(name, "/")
		if err := cache.CheckRelPath(d); err != nil {
			return bad(name, "%v", err)
		}
		for _, p := range u.parts {
			if cd := p.m.CacheDir; d == cd || cache.UnderDir(d, cd) || strings.HasPrefix(cd, d+"/") {
				return nil // directories come with their files
			}
		}
		return bad(name, "a directory outside the cache folder %s", u.parts[0].m.CacheDir)
	}
	if err := cache.CheckRelPath(name); err != nil {
		return bad(name, "%v", err)
	}
	if err := plainEntry(h); err != nil {
		return err
	}
	p, ok := u.owner[name]
	if !ok && path.Base(name) == cache.ManifestName {
		return bad(name, "a manifest out of place (an archive holds the manifest of a second folder only right after the first one, "+
			"and only of the folder that one names as its companion)")
	}
	var rec cache.FileRecord
	if ok {
		rec = p.recs[name]
	}
	switch {
	case !ok:
		return bad(name, "not in the manifest")
	case u.seen[name]:
		return bad(name, "appears twice")
	case h.Size != rec.Size:
		return bad(name, "declares %d bytes, the manifest records %d", h.Size, rec.Size)
	}
	u.seen[name] = true
	// The header must describe a file of exactly the declared size before
	// anything is written.
	head, hdr, err := readHead(tr, name, rec.Size)
	if err != nil {
		return err
	}
	if hdr.HeaderSize != rec.HeaderSize {
		return bad(name, "header size %d, the manifest records %d", hdr.HeaderSize, rec.HeaderSize)
	}
	if !u.spaceChecked {
		// Once the first entry's header showed the archive to be what it
		// claims: does all it declares fit?
		u.spaceChecked = true
		if err := u.checkSpace(); err != nil {
			return err
		}
	}
	rel := strings.TrimPrefix(name, p.m.CacheDir+"/")
	if d := path.Dir(rel); !p.dirs[d] {
		if err := p.root.MkdirAll(d, 0o755); err != nil {
			return &atomicfile.WriteError{Op: "creating", Path: filepath.Join(p.stage, filepath.FromSlash(d)), Err: err}
		}
		for ; d != "."; d = path.Dir(d) {
			p.dirs[d] = true
		}
	}
	f, err := p.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &atomicfile.WriteError{Op: "creating", Path: filepath.Join(p.stage, filepath.FromSlash(rel)), Err: err}
	}
	rh := newRegionHasher()
	w := io.MultiWriter(outputWriter{f}, rh, progressWriter{u.opt.Progress})
	_, err = w.Write(head)
	if err == nil {
		_, err = io.Copy(w, tr) // the tar reader stops at the declared size
	}
	if err == nil && !u.opt.noSync {
		if err = f.Sync(); err != nil {
			err = &atomicfile.WriteError{Op: "syncing", Err: err}
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &atomicfile.WriteError{Op: "closing", Err: cerr}
	}
	if err != nil {
		if errors.Is(err, atomicfile.ErrWrite) {
			return fmt.Errorf("extracting %s: %w", name, err)
		}
		return asBad(name, err)
	}
	switch {
	case rh.n != rec.Size:
		return bad(name, "%d bytes, the manifest records %d", rh.n, rec.Size)
	case rh.sum() != rec.DataXXH3:
		return bad(name, "data hash %s, the manifest records %s", rh.sum(), rec.DataXXH3)
	case rh.headerSum() != rec.HeaderXXH3:
		return bad(name, "header hash %s, the manifest records %s", rh.headerSum(), rec.HeaderXXH3)
	}
	if rec.MTimeNS != 0 {
		// The recorded mtime, as the build left it (a rebuild still
		// rebuilds unpacked files: cache.Unpacked).
		mt := time.Unix(0, rec.MTimeNS)
		if err := p.root.Chtimes(rel, mt, mt); err != nil {
			return &atomicfile.WriteError{Op: "setting the mtime of", Path: filepath.Join(p.stage, filepath.FromSlash(rel)), Err: err}
		}
	}
	u.opt.Progress.ItemDone()
	return nil
}

// readHead reads the header of a .tensorbin entry of the declared size
// (its size word, at most tensorbin.MaxHeaderSize bytes of FlatBuffer) and
// parses it: the header must describe a file of exactly that size.
func readHead(r io.Reader, name string, size int64) ([]byte, *tensorbin.Header, error) {
	if size < 8 {
		return nil, nil, bad(name, "%d bytes, too short for a .tensorbin file", size)
	}
	var word [8]byte
	if _, err := io.ReadFull(r, word[:]); err != nil {
		return nil, nil, asBad(name, err)
	}
	hs := binary.LittleEndian.Uint64(word[:])
	if hs > tensorbin.MaxHeaderSize || hs > uint64(size-8) {
		return nil, nil, bad(name, "header size %d exceeds the limit %d or the %d bytes after it", hs, tensorbin.MaxHeaderSize, size-8)
	}
	head := make([]byte, 8+hs)
	copy(head, word[:])
	if _, err := io.ReadFull(r, head[8:]); err != nil {
		return nil, nil, asBad(name, err)
	}
	hdr, err := tensorbin.ReadTensorbinHeader(bytes.NewReader(head), size)
	if err != nil {
		return nil, nil, bad(name, "%v", err)
	}
	if hdr.FileSize() != size {
		return nil, nil, bad(name, "its header describes a file of %d bytes, the entry declares %d", hdr.FileSize(), size)
	}
	return head, hdr, nil
}

// checkSpace refuses (our side: *atomicfile.WriteError) an archive whose files
// do not fit in the free space beside their folders: the files of folders
// on one file system (a vision model's two folders, side by side) are
// counted together.
func (u *unpacker) checkSpace() error {
	type pool struct {
		parts []*part
		need  int64
		files int
	}
	var pools []*pool
	for _, p := range u.parts {
		var in *pool
		for _, q := range pools {
			if cache.SameFileSystem(q.parts[0].stage, p.stage) {
				in = q
				break
			}
		}
		if in == nil {
			in = &pool{}
			pools = append(pools, in)
		}
		in.parts = append(in.parts, p)
		for _, f := range p.m.Files {
			in.need += f.Size
		}
		in.files += len(p.m.Files)
	}
	for _, q := range pools {
		avail, ok := u.opt.freeBytes(q.parts[0].stage)
		if !ok || avail >= q.need {
			continue
		}
		first := q.parts[0]
		if len(q.parts) == 1 {
			return &atomicfile.WriteError{Op: "unpacking", Path: first.path,
				Err: fmt.Errorf("the archive's %d files need %s; %s is free beside the folder (the old copy stays until the new one is complete)",
					q.files, ckpt.FormatBytes(q.need), ckpt.FormatBytes(avail))}
		}
		return &atomicfile.WriteError{Op: "unpacking", Path: first.path, Err: fmt.Errorf("the archive's %d files of the model's two folders "+
			"(this one and %s, on one file system) need %s (%d bytes) together; %s (%d bytes) is free beside the folders "+
			"(the old copies stay until the new ones are complete)",
			q.files, q.parts[1].path, ckpt.FormatBytes(q.need), q.need, ckpt.FormatBytes(avail), avail)}
	}
	return nil
}

// plainEntry refuses an entry that is neither a plain regular file nor a
// directory: links, devices, and sparse files (whose holes the tar reader
// fills with zeros: gigabytes from a few bytes of archive).
func plainEntry(h *tar.Header) error {
	if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
		return bad(h.Name, "%s, not a regular file", typeName(h.Typeflag))
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return bad(h.Name, "a sparse file (PAX record %s), not a plain regular file", k)
		}
	}
	return nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "a device node"
	case tar.TypeFifo:
		return "a FIFO"
	case tar.TypeGNUSparse:
		return "a sparse file"
	}
	return fmt.Sprintf("of tar type %q", t)
}
