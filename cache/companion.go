package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/mapping"
)

// The two folders of a vision model: the text folder
// <device>/tensor_cache_<tag>_mesh1xN and the vision folder
// <device>/tensor_cache_bfp8 (tensor_cache_instruct_bfp8) beside it
// (docs/tensor-cache-layout.md, The vision tower). ckpt's manifests name
// each other (Manifest.Companion, Part); a folder the serving stack wrote
// has no manifest, and its vision folder is known by its name and files.

// FindCompanion finds the other folder of a model's main folder f: the vision
// folder its manifest names (Named; Exists says whether it is there), or,
// for a folder without a ckpt manifest, the one vision folder beside it
// in its device folder: a stack-written one (an unmeshed folder without
// a manifest whose files are the vision tower's, visual.*) or one whose
// vision manifest names f. ok is false
// when f has no companion (a text-only model, a vision folder, or
// several candidate vision folders beside a manifest-less one).
func FindCompanion(f Folder) (comp Folder, named, exists, ok bool) {
	if f.Unmeshed() {
		return Folder{}, false, false, false
	}
	if m, err := ReadManifest(f.Path()); err == nil {
		if m.Part != "" || m.Companion == "" {
			return Folder{}, false, false, false
		}
		c := Folder{Root: f.Root, Dir: m.Companion}
		st, err := os.Stat(c.Path())
		return c.withManifestMesh(), true, err == nil && st.IsDir(), true
	}
	var found []Folder
	for _, c := range deviceFolders(f) {
		if !c.Unmeshed() {
			continue
		}
		if m, err := ReadManifest(c.Path()); err == nil {
			if m.Part == mapping.PartVision && m.Companion == f.Dir {
				found = append(found, c.withManifestMesh()) // it names f
			}
		} else if isStackVision(c) {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		return Folder{}, false, false, false
	}
	return found[0], false, true, true
}

// PartOf is the main folder that the ckpt manifest of the vision folder
// comp names as its model's (Manifest.Companion), when that is not main
// and the part is not the one main's build would have written: it was
// built for another mesh, device, source, variant or profile. A device
// folder has one vision folder (its name carries no mesh and no text
// tag), so a build of another model into it takes it over; a build of
// the same model under another tag writes the same files. ok is false
// when comp is main's vision part, or either folder has no manifest.
func PartOf(main, comp Folder) (owner string, ok bool) {
	vm, err := ReadManifest(comp.Path())
	if err != nil || vm.Part == "" || vm.Companion == "" || vm.Companion == main.Dir {
		return "", false
	}
	tm, err := ReadManifest(main.Path())
	if err != nil || SamePart(tm, vm.Mesh, vm.Device, vm.Source, vm.Variant, vm.Profile) {
		return "", false
	}
	return vm.Companion, true
}

// SamePart reports whether a vision part built with mesh, device, source,
// variant and (main) profile is the one the build of the main folder
// whose manifest is m wrote.
func SamePart(m *Manifest, mesh, device, source, variant, profile string) bool {
	return m.Mesh == mesh && m.Device == device && m.Source == source && m.Variant == variant && m.Profile == profile
}

// deviceFolders lists the cache folders of f's device folder, f itself
// left out.
func deviceFolders(f Folder) []Folder {
	dev := path.Dir(f.Dir)
	ents, err := os.ReadDir(filepath.Join(f.Root, filepath.FromSlash(dev)))
	if err != nil {
		return nil
	}
	var out []Folder
	for _, e := range ents {
		c := Folder{Root: f.Root, Dir: dev + "/" + e.Name()}
		if c.Dir == f.Dir || !folderRE.MatchString(e.Name()) || !isDirFollow(filepath.Join(f.Root, filepath.FromSlash(dev)), e) {
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// isStackVision reports whether f is a vision folder the serving stack
// wrote: no ckpt manifest, and a .tensorbin file of the vision tower
// (a cache name starting visual.) directly in it.
func isStackVision(f Folder) bool {
	if _, err := os.Stat(filepath.Join(f.Path(), ManifestName)); !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	ents, err := os.ReadDir(f.Path())
	if err != nil {
		return false
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), mapping.FileExt) && strings.HasPrefix(e.Name(), "visual.") {
			return true
		}
	}
	return false
}

// tpRE is the mesh width a vision file's cache name ends in (.tp<N>).
var tpRE = regexp.MustCompile(`\.tp([0-9]+)$`)

// MeshInference is the mesh of a vision folder named without one and
// without a ckpt manifest, as its files' names and the text folder beside
// it show it: From says how, in words ("the .tp4 file names and the text
// folder P300/tensor_cache_bfp8_mesh1x4 beside it").
type MeshInference struct {
	Mesh string
	From string
}

// MeshError says the mesh of a vision folder cannot be inferred: no file
// name and no text folder beside it gives one, the file names give
// several, or they and the text folder disagree.
type MeshError struct {
	Dir    string
	Reason string
}

// Error names the vision folder and why its mesh cannot be told.
func (e *MeshError) Error() string {
	return fmt.Sprintf("vision folder %s: cannot tell its mesh: %s", e.Dir, e.Reason)
}

// InferMesh infers the mesh of the vision folder f (named without a mesh)
// from the .tp<N> suffix of its files' cache names (files are its
// .tensorbin paths, relative to it) and from the meshed folder beside it
// in its device folder (the text folder of the same model): both must
// agree when both are known, and at least one must be. It returns
// *MeshError otherwise.
func InferMesh(f Folder, files []string) (MeshInference, error) {
	widths := map[int][]string{}
	for _, p := range files {
		if m := tpRE.FindStringSubmatch(mapping.CacheName(p)); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				widths[n] = append(widths[n], p)
			}
		}
	}
	var ns []int
	for n := range widths {
		ns = append(ns, n)
	}
	sort.Ints(ns)
	if len(ns) > 1 {
		var parts []string
		for _, n := range ns {
			parts = append(parts, fmt.Sprintf(".tp%d (%d file(s), e.g. %s)", n, len(widths[n]), widths[n][0]))
		}
		return MeshInference{}, &MeshError{Dir: f.Path(), Reason: "its file names end in different mesh widths: " + strings.Join(parts, ", ")}
	}
	// The meshed folders beside it (its text folder).
	var meshes []string
	text := map[string]string{}
	for _, c := range deviceFolders(f) {
		if m := c.Mesh(); !c.Unmeshed() && m != "" {
			if _, ok := text[m]; !ok {
				meshes = append(meshes, m)
				text[m] = c.Dir
			}
		}
	}
	sort.Strings(meshes)
	switch {
	case len(ns) == 1 && len(meshes) > 0:
		mesh := fmt.Sprintf("1x%d", ns[0])
		if _, ok := text[mesh]; !ok {
			beside := "the text folder beside it, " + text[meshes[0]] + ", is for mesh " + meshes[0]
			if len(meshes) > 1 {
				beside = "the text folders beside it are for meshes " + strings.Join(meshes, ", ")
			}
			return MeshInference{}, &MeshError{Dir: f.Path(), Reason: fmt.Sprintf("its file names end in .tp%d (mesh %s, e.g. %s), and %s",
				ns[0], mesh, widths[ns[0]][0], beside)}
		}
		return MeshInference{Mesh: mesh, From: fmt.Sprintf("the .tp%d file names and the text folder %s beside it", ns[0], text[mesh])}, nil
	case len(ns) == 1:
		return MeshInference{Mesh: fmt.Sprintf("1x%d", ns[0]), From: fmt.Sprintf("the .tp%d file names (no text folder beside it)", ns[0])}, nil
	case len(meshes) == 1:
		from := fmt.Sprintf("the text folder %s beside it (no file name ends in .tp<N>)", text[meshes[0]])
		return MeshInference{Mesh: meshes[0], From: from}, nil
	case len(meshes) > 1:
		why := fmt.Sprintf("no file name ends in .tp<N>, and the text folders beside it are for meshes %s", strings.Join(meshes, ", "))
		return MeshInference{}, &MeshError{Dir: f.Path(), Reason: why}
	}
	return MeshInference{}, &MeshError{Dir: f.Path(),
		Reason: "no file name ends in .tp<N>, no text folder (tensor_cache_<tag>_mesh1xN) is beside it, and it has no ckpt manifest"}
}
