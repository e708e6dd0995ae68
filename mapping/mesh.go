package mapping

import (
	"fmt"
	"strconv"
	"strings"
)

// Mesh is a device mesh shape. The plans here support 1×N meshes (tensor
// parallelism over N devices along the columns).
type Mesh struct {
	Rows, Cols int
}

// DefaultMesh is the mesh of a plan that names none: the --mesh default
// of ckpt map and ckpt cache build, and Resolve's for a zero
// PlanOptions.Mesh. Read it, never assign it.
var DefaultMesh = Mesh{Rows: 1, Cols: 2}

// ParseMesh parses "1x2" (or "1X2").
func ParseMesh(s string) (Mesh, error) {
	r, c, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return Mesh{}, fmt.Errorf("mesh %q: want ROWSxCOLS, e.g. 1x2", s)
	}
	rows, err1 := strconv.Atoi(r)
	cols, err2 := strconv.Atoi(c)
	if err1 != nil || err2 != nil || rows < 1 || cols < 1 || rows > 64 || cols > 64 {
		return Mesh{}, fmt.Errorf("mesh %q: want ROWSxCOLS with 1..64 devices each, e.g. 1x2", s)
	}
	return Mesh{Rows: rows, Cols: cols}, nil
}

// String is "1x2".
func (m Mesh) String() string { return fmt.Sprintf("%dx%d", m.Rows, m.Cols) }

// devices is the number of devices.
func (m Mesh) devices() int { return m.Rows * m.Cols }

// MarshalText makes a Mesh a JSON string.
func (m Mesh) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// CacheDir is the cache directory of a profile on this mesh, relative to
// the cache root: <device>/tensor_cache_<tag>_mesh<R>x<C>.
func CacheDir(device, tag string, m Mesh) string {
	return fmt.Sprintf("%s/tensor_cache_%s_mesh%dx%d", device, tag, m.Rows, m.Cols)
}

// UnmeshedCacheDir is the cache folder <device>/tensor_cache_<tag> of a
// profile whose folder is named without the mesh (Profile.Folder
// FolderUnmeshed: the vision part's).
func UnmeshedCacheDir(device, tag string) string {
	return device + "/tensor_cache_" + tag
}

// FileExt is the extension of cache files.
const FileExt = ".tensorbin"

// FileName is the file ttnn.as_tensor reads or writes for a cache name:
// <name>_dtype_<DTYPE>_layout_<LAYOUT>.tensorbin. name may contain slashes
// and dots (e.g. "layers.3/tp/qkvzab.dramshard"). It is the one definition
// of cache file names; CacheName is its inverse.
func FileName(name, dtype, layout string) string {
	return fmt.Sprintf("%s_dtype_%s_layout_%s%s", name, dtype, layout, FileExt)
}

// CacheName returns the cache name of a cache file path: the path without
// its _dtype_<DTYPE>_layout_<LAYOUT>.tensorbin suffix.
func CacheName(file string) string {
	if i := strings.LastIndex(file, "_dtype_"); i >= 0 {
		return file[:i]
	}
	return strings.TrimSuffix(file, FileExt)
}
