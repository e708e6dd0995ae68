package cache

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// A cache root (TT_CACHE_PATH) holds one cache folder per device, tag and
// mesh, side by side: <root>/<device>/tensor_cache_<tag>_mesh<R>x<C>/, and
// the folder of a model's vision tower, named without a mesh:
// <root>/<device>/tensor_cache_<tag>/ (its manifest says it is a vision
// part, and names the model's main folder: Manifest.Part, Companion). Each
// folder has its own manifest, build journal and lock, so that builds for
// other meshes, tags, devices or checkpoints never touch each other.

// folderRE matches the name of a cache folder; the mesh is optional.
var folderRE = regexp.MustCompile(`^tensor_cache_(.+?)(?:_mesh([0-9]+x[0-9]+))?$`)

// IsFolderName reports whether name (a base name) is that of a cache
// folder: tensor_cache_<tag>_mesh<R>x<C>, or tensor_cache_<tag> (a vision
// tower's folder, or upstream's single-device one).
func IsFolderName(name string) bool { return folderRE.MatchString(name) }

// Folder is one cache folder of a cache root.
type Folder struct {
	Root string // the cache root
	Dir  string // slash-separated, relative to Root: <device>/tensor_cache_<tag>_mesh<R>x<C>
	// mesh is the manifest's mesh of a folder named without one (Folders).
	mesh string
}

// Path is the folder's path.
func (f Folder) Path() string { return filepath.Join(f.Root, filepath.FromSlash(f.Dir)) }

// Device, Tag and Mesh are the parts of the folder's name.
func (f Folder) Device() string { return path.Dir(f.Dir) }

// Tag is the cache tag of the folder's name.
func (f Folder) Tag() string { return folderRE.FindStringSubmatch(path.Base(f.Dir))[1] }

// Mesh is the mesh of the folder's name, e.g. "1x2"; "" for a folder
// named without one.
func (f Folder) Mesh() string {
	if m := folderRE.FindStringSubmatch(path.Base(f.Dir))[2]; m != "" {
		return m
	}
	return f.mesh
}

// Unmeshed says the folder is named without a mesh (a vision folder,
// <device>/tensor_cache_<tag>).
func (f Folder) Unmeshed() bool { return folderRE.FindStringSubmatch(path.Base(f.Dir))[2] == "" }

// withManifestMesh fills in the mesh of a folder named without one from
// its manifest (a vision folder records the mesh it was built for).
func (f Folder) withManifestMesh() Folder {
	if folderRE.FindStringSubmatch(path.Base(f.Dir))[2] == "" {
		if m, err := ReadManifest(f.Path()); err == nil {
			f.mesh = m.Mesh
		}
	}
	return f
}

// dropCompanions removes from fs the vision folders whose main folder is
// also in fs: a model's folders count as one, its main folder.
func dropCompanions(fs []Folder) []Folder {
	in := map[string]bool{}
	for _, f := range fs {
		in[f.Dir] = true
	}
	// A stack's (manifest-less) vision folder goes with the meshed folder
	// that names it as its companion (FindCompanion).
	stack := map[string]bool{}
	for _, f := range fs {
		if c, named, _, ok := FindCompanion(f); ok && !named {
			stack[c.Dir] = true
		}
	}
	var out []Folder
	for _, f := range fs {
		if m, err := ReadManifest(f.Path()); err == nil && m.Part == mapping.PartVision && in[m.Companion] {
			continue
		}
		if stack[f.Dir] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// FolderOf returns the cache folder of a plan's CacheDir under root.
func FolderOf(root, cacheDir string) Folder { return Folder{Root: root, Dir: cacheDir} }

// Selector narrows the cache folders of a root; empty fields match all.
type Selector struct {
	Device, Tag, Mesh string
}

// Match reports whether f's device, tag and mesh equal the selector's
// non-empty fields.
func (s Selector) Match(f Folder) bool {
	return (s.Device == "" || s.Device == f.Device()) && (s.Tag == "" || s.Tag == f.Tag()) && (s.Mesh == "" || s.Mesh == f.Mesh())
}

// Folders lists the cache folders of a root (<device>/tensor_cache_*_mesh*
// directories, or symbolic links to directories), sorted. root may also
// be a device folder (one that holds cache folders itself): its folders
// are listed, with the directory above it as their root.
func Folders(root string) ([]Folder, error) {
	devs, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("listing cache root %s: %w", root, err)
	}
	if out := deviceFolder(root, devs); len(out) > 0 {
		return out, nil
	}
	var out []Folder
	for _, d := range devs {
		if !isDirFollow(root, d) || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		dev := filepath.Join(root, d.Name())
		sub, err := os.ReadDir(dev)
		if err != nil {
			continue
		}
		for _, s := range sub {
			if folderRE.MatchString(s.Name()) && isDirFollow(dev, s) {
				out = append(out, Folder{Root: root, Dir: d.Name() + "/" + s.Name()}.withManifestMesh())
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// deviceFolder lists the cache folders directly in dir (ents are its
// entries) when dir is a device folder, as Folders lists a root's: with
// the directory above dir as their root. It is nil when dir holds none.
func deviceFolder(dir string, ents []os.DirEntry) []Folder {
	var names []string
	for _, e := range ents {
		if folderRE.MatchString(e.Name()) && isDirFollow(dir, e) {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil
	}
	dev := filepath.Clean(dir)
	if b := filepath.Base(dev); b == "." || b == ".." || b == string(filepath.Separator) {
		if abs, err := filepath.Abs(dev); err == nil {
			dev = abs
		}
	}
	var out []Folder
	for _, n := range names {
		out = append(out, Folder{Root: filepath.Dir(dev), Dir: filepath.Base(dev) + "/" + n}.withManifestMesh())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// isDirFollow reports whether the entry d of dir is a directory or a
// symbolic link to one.
func isDirFollow(dir string, d os.DirEntry) bool {
	if d.Type()&os.ModeSymlink == 0 {
		return d.IsDir()
	}
	st, err := os.Stat(filepath.Join(dir, d.Name()))
	return err == nil && st.IsDir()
}

// NoCacheError says a directory is neither a cache folder nor a cache root
// holding one that the selector matches.
type NoCacheError struct {
	Dir      string
	Selector Selector
	Others   []Folder // folders present that the selector left out
	// Checkpoint is the checkpoint file Dir holds (CheckpointFile) when
	// it is a checkpoint directory, not a cache.
	Checkpoint string
}

// Error says Dir holds no cache folder (or is a checkpoint directory, and
// how to build a cache from it), naming the folders the selector left out.
func (e *NoCacheError) Error() string {
	if e.Checkpoint != "" {
		return fmt.Sprintf("not a cache: %s is a checkpoint directory (it holds %s); ckpt cache build %s -o DIR builds a cache from it",
			e.Dir, ckpt.EscapeName(e.Checkpoint), e.Dir)
	}
	msg := fmt.Sprintf("%s holds no cache folder (<device>/tensor_cache_<tag>_mesh<R>x<C>)", e.Dir)
	if len(e.Others) > 0 {
		msg = fmt.Sprintf("%s holds no cache folder for%s; it has %s", e.Dir, e.Selector.describe(), folderList(e.Others))
	}
	return msg
}

// AmbiguousCacheError says a cache root holds several cache folders and
// nothing says which one is meant (a Selector chooses one).
type AmbiguousCacheError struct {
	Dir     string
	Folders []Folder
}

// Error lists the cache folders of Dir and says how to choose one.
func (e *AmbiguousCacheError) Error() string {
	return e.Listed() + ": pass one of them, or choose with a Selector (Mesh, Tag or Device)"
}

// Listed is the first part of the message: Dir and its cache folders.
func (e *AmbiguousCacheError) Listed() string {
	return fmt.Sprintf("%s holds %d cache folders (%s)", e.Dir, len(e.Folders), folderList(e.Folders))
}

func (s Selector) describe() string {
	var b strings.Builder
	if s.Device != "" {
		b.WriteString(" device " + s.Device)
	}
	if s.Tag != "" {
		b.WriteString(" tag " + s.Tag)
	}
	if s.Mesh != "" {
		b.WriteString(" mesh " + s.Mesh)
	}
	return b.String()
}

func folderList(fs []Folder) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Dir
	}
	return strings.Join(names, ", ")
}

// ResolveFolder finds the cache folder that dir names: dir itself when it
// is a cache folder (its name is tensor_cache_<tag>_mesh<R>x<C>), else the
// one folder of the cache root dir that sel matches. It returns
// *NoCacheError or *AmbiguousCacheError when there is none or several.
func ResolveFolder(dir string, sel Selector) (Folder, error) {
	clean := filepath.Clean(dir)
	if base := filepath.Base(clean); folderRE.MatchString(base) {
		dev := filepath.Dir(clean)
		if b := filepath.Base(dev); b == "." || b == ".." || b == string(filepath.Separator) {
			// the folder named from inside its device folder (or via
			// ..): the device is the name of the directory it is in
			if abs, err := filepath.Abs(clean); err == nil {
				dev = filepath.Dir(abs)
			}
		}
		f := Folder{Root: filepath.Dir(dev), Dir: filepath.Base(dev) + "/" + base}.withManifestMesh()
		if !sel.Match(f) {
			return Folder{}, &NoCacheError{Dir: dir, Selector: sel, Others: []Folder{f}}
		}
		return f, nil
	}
	all, err := Folders(dir)
	if err != nil {
		return Folder{}, err
	}
	var fs []Folder
	for _, f := range all {
		if sel.Match(f) {
			fs = append(fs, f)
		}
	}
	if len(fs) > 1 {
		fs = dropCompanions(fs)
	}
	switch len(fs) {
	case 0:
		e := &NoCacheError{Dir: dir, Selector: sel, Others: dropCompanions(all)}
		if len(all) == 0 {
			e.Checkpoint = CheckpointFile(dir)
		}
		return Folder{}, e
	case 1:
		return fs[0], nil
	}
	return Folder{}, &AmbiguousCacheError{Dir: dir, Folders: fs}
}

// CheckpointFile is the checkpoint file directly in dir — its index when
// it has one, else its first .safetensors file —, or "" when dir holds
// none (or cannot be read): a directory it names is a checkpoint, not a
// cache.
func CheckpointFile(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var found []string
	for _, d := range ents {
		n := d.Name()
		if n == ckpt.IndexFile || strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".safetensors.index.json") {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return ""
	}
	sort.Strings(found)
	for _, n := range found {
		if strings.HasSuffix(n, ".json") {
			return n
		}
	}
	return found[0]
}

// UnderDir reports whether a root-relative file path lies in cacheDir.
func UnderDir(p, cacheDir string) bool { return strings.HasPrefix(p, cacheDir+"/") }
