package mapping

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Architectures of Tenstorrent devices, as ttnn.get_arch_name names them.
const (
	ArchBlackhole = "blackhole"
	ArchWormhole  = "wormhole_b0"
)

// deviceNames is the device folder a serving stack writes its cache under,
// by architecture and number of devices in the mesh, when MESH_DEVICE is
// not set: determine_device_name of tt-metal's tt_transformers
// model_config.py (and its copies in the model demos). A one-device
// Blackhole mesh whose DRAM grid is 7x1 is a P100, not a P150: the grid is
// not known offline, so --device P100 selects it.
var deviceNames = map[string]map[int]string{
	ArchBlackhole: {1: "P150", 2: "P300", 4: "P150x4", 8: "P150x8", 32: "BHGLX"},
	ArchWormhole:  {1: "N150", 2: "N300", 4: "N150x4", 8: "T3K", 32: "TG"},
}

// deviceName is the device folder upstream uses for a mesh of n devices of
// an architecture (see deviceNames). Meshes of other sizes have no name
// upstream: the error says so and which sizes have one.
func deviceName(arch string, n int, w ckpt.Words) (string, error) {
	names, ok := deviceNames[arch]
	if !ok {
		return "", fmt.Errorf("unknown device architecture %q (want %s or %s)", arch, ArchBlackhole, ArchWormhole)
	}
	if name, ok := names[n]; ok {
		return name, nil
	}
	var sizes []int
	for k := range names {
		sizes = append(sizes, k)
	}
	sort.Ints(sizes)
	return "", fmt.Errorf("no %s device folder for %d devices upstream (it names meshes of %s devices); choose one with %s",
		arch, n, joinInts(sizes), w.Of("Device"))
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// validDeviceFolder is a device folder name: one path element of letters,
// digits, '_', '-' and '.', as MESH_DEVICE values are (P300x2, T3K).
var validDeviceFolder = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// checkDeviceFolder reports whether name can be a device folder: a single
// path element (no separators, not "." or "..").
func checkDeviceFolder(name string) error {
	if !validDeviceFolder.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("device folder %q: want one path element such as P300 or P150x4", name)
	}
	return nil
}

// checkTag reports whether tag can be the cache tag of a folder name
// tensor_cache_<tag>_mesh<R>x<C>: one path element of letters, digits,
// '_', '-' and '.' (as device folders are), so that the folder is a single
// directory under its device folder, where cache verify, ls and identify
// look for it.
func checkTag(tag string) error {
	if !validDeviceFolder.MatchString(tag) {
		return fmt.Errorf("cache tag %q: want one folder-name part of letters, digits, '_', '-' and '.' such as bfp8 (it names the folder "+
			"tensor_cache_<tag>_mesh1xN)", tag)
	}
	return nil
}

// deviceFor is the device folder of the profile's cache on a mesh: the
// profile's fixed Device when it has one, else upstream's name for the
// number of devices of its architecture (Blackhole when unset).
// w names the option of the device folder (PlanOptions.Device).
func (p *Profile) deviceFor(m Mesh, w ckpt.Words) (string, error) {
	if p.Device != "" {
		return p.Device, nil
	}
	arch := p.Arch
	if arch == "" {
		arch = ArchBlackhole
	}
	return deviceName(arch, m.devices(), w)
}
