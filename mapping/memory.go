package mapping

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// board is a Tenstorrent board family and the DRAM of each of its chips
// (each chip is one device of a mesh).
type board struct {
	Name string `json:"name"` // as a device folder names it: P150, P300, N150, N300...
	// Chip describes the chip and its DRAM, e.g. "Blackhole, 32 GiB GDDR6".
	Chip string `json:"chip"`
	// DRAM is the GDDR6 of one chip, in bytes. It is the physical size:
	// tt-metal keeps part of each DRAM bank for itself, so the room left
	// for tensors is somewhat smaller.
	DRAM int64 `json:"dram"`
	// Arch is the chips' architecture (ArchBlackhole, ArchWormhole) and
	// Chips how many the board (or system) has: the largest mesh it opens.
	Arch  string `json:"arch"`
	Chips int    `json:"chips"`
}

// boards are the known device folders and the DRAM of one chip. Sources
// (published specifications, read 2026-12-01):
//   - Blackhole: docs.tenstorrent.com/aibs/blackhole/specifications —
//     p150a/p150b "Memory: 32 GB GDDR6", p100a 28 GB; the p300 (device
//     folder P300, a 1x2 mesh upstream) carries two Blackhole chips, each
//     with the SoC's 32 GB (docs.tenstorrent.com/tt-system-firmware, board
//     tt_blackhole: "32 GB of on-board GDDR6", P300A/B/C listed).
//   - Wormhole: docs.tenstorrent.com/aibs/wormhole/specifications — the
//     Wormhole Tensix Processor has "Memory: 12GB GDDR6"; n150 one chip
//     (12GB), n300 two chips (24GB, 12GB each).
//
// GDDR6 parts come in binary densities, so "32 GB" is 32 GiB.
// Multi-board folders (P150x4, T3K...) are meshes of the same chips.
var boards = map[string]board{
	"P100":   {Name: "P100", Chip: "Blackhole p100a, 28 GiB GDDR6", DRAM: 28 << 30, Arch: ArchBlackhole, Chips: 1},
	"P150":   {Name: "P150", Chip: "Blackhole p150, 32 GiB GDDR6", DRAM: 32 << 30, Arch: ArchBlackhole, Chips: 1},
	"P300":   {Name: "P300", Chip: "Blackhole p300, 32 GiB GDDR6 per chip (two chips)", DRAM: 32 << 30, Arch: ArchBlackhole, Chips: 2},
	"P150x4": {Name: "P150x4", Chip: "Blackhole p150 ×4, 32 GiB GDDR6 per chip", DRAM: 32 << 30, Arch: ArchBlackhole, Chips: 4},
	"P150x8": {Name: "P150x8", Chip: "Blackhole p150 ×8, 32 GiB GDDR6 per chip", DRAM: 32 << 30, Arch: ArchBlackhole, Chips: 8},
	"N150":   {Name: "N150", Chip: "Wormhole n150, 12 GiB GDDR6", DRAM: 12 << 30, Arch: ArchWormhole, Chips: 1},
	"N300":   {Name: "N300", Chip: "Wormhole n300, 12 GiB GDDR6 per chip (two chips)", DRAM: 12 << 30, Arch: ArchWormhole, Chips: 2},
	"N150x4": {Name: "N150x4", Chip: "Wormhole n150 ×4, 12 GiB GDDR6 per chip", DRAM: 12 << 30, Arch: ArchWormhole, Chips: 4},
	"T3K":    {Name: "T3K", Chip: "Wormhole n300 ×4 (T3000), 12 GiB GDDR6 per chip", DRAM: 12 << 30, Arch: ArchWormhole, Chips: 8},
}

// archName is how messages name an architecture.
func archName(arch string) string {
	switch arch {
	case ArchBlackhole:
		return "Blackhole"
	case ArchWormhole:
		return "Wormhole"
	}
	return arch
}

// deviceProblems are the reasons the device folder's board cannot serve
// the plan as planned: a mesh of more devices than the board has chips
// (ttnn cannot open it there), or a board of another architecture than
// the profile's (the serving stack runs another line there: its files
// and memory configs are not the ones planned). None for a folder that
// is no known board (--device, MESH_DEVICE such as P300x2). w names the
// option of the device folder (PlanOptions.Device).
func deviceProblems(p *Profile, device string, mesh Mesh, w ckpt.Words) []string {
	b, ok := boardOf(device)
	if !ok {
		return nil
	}
	var out []string
	if n := mesh.devices(); n > b.Chips {
		out = append(out, fmt.Sprintf("device folder %s is a %s board with %d chip(s): a %s mesh of %d devices does not open on it (a mesh of at most %d "+
			"devices, or the device folder of a larger system: %s or MESH_DEVICE)",
			device, archName(b.Arch), b.Chips, mesh, n, b.Chips, w.Of("Device")))
	}
	arch := p.Arch
	if arch == "" {
		arch = ArchBlackhole
	}
	if b.Arch != arch {
		out = append(out, fmt.Sprintf("device folder %s is a %s board, and profile %s plans for %s: on %s the serving stack runs another line of the model "+
			"(other file names and memory configs, not transcribed), so this would not be the cache it loads (a %s device folder: %s or MESH_DEVICE; or a "+
			"profile whose arch is %s)",
			device, archName(b.Arch), p.Name, archName(arch), archName(b.Arch), archName(arch), w.Of("Device"), b.Arch))
	}
	return out
}

// boardOf returns the known board of a device folder name.
func boardOf(device string) (board, bool) {
	b, ok := boards[device]
	return b, ok
}

// DeviceBytes is what one device of the mesh holds in DRAM under a plan.
type DeviceBytes struct {
	Device int   `json:"device"` // row-major index in the mesh
	Coord  []int `json:"coord"`  // [row, col]
	// Bytes is the DRAM the plan's tensors take on the device: for every
	// target, its shard (sharded) or its whole tensor (replicated), in the
	// target's dtype and layout (tiles padded to 32x32).
	Bytes   int64 `json:"bytes"`
	Tensors int   `json:"tensors"`
	// Largest is the target with the largest piece on the device.
	Largest      string `json:"largest_target"`
	LargestBytes int64  `json:"largest_bytes"`
	// Headroom is DRAM - Bytes (negative when it does not fit), set when
	// the DRAM is known.
	Headroom *int64 `json:"headroom,omitempty"`
	Fits     *bool  `json:"fits,omitempty"`
}

// Memory is the per-device memory of a plan and whether it fits. The JSON
// documents carry PerDevice beside it, as per_device.
type Memory struct {
	PerDevice []DeviceBytes `json:"-"`
	// LargestFile is the plan's largest .tensorbin file and its data bytes
	// (every stored shard; the header of a few KiB is not counted).
	LargestFile      string `json:"largest_file"`
	LargestFileBytes int64  `json:"largest_file_bytes"`
	// DRAM is the DRAM of one device (0: unknown), DRAMFrom where the
	// figure comes from: the caller's word for its DeviceDRAM option
	// (PlanOptions.Words; "Options.DeviceDRAM" without one), or the
	// board's Chip.
	DRAM     int64  `json:"dram,omitempty"`
	DRAMFrom string `json:"dram_from,omitempty"`
	// Fits and Headroom (the smallest of the devices') are set when DRAM
	// is known and the board can hold the mesh.
	Fits     *bool  `json:"fits,omitempty"`
	Headroom *int64 `json:"headroom,omitempty"`
	// NotJudged says why the fit is not judged although the DRAM is known
	// (a mesh of more devices than the board has chips).
	NotJudged string `json:"not_judged,omitempty"`
}

// Memory computes what each device holds under the plan (its vision part
// included: the tower is on the same devices). dram is the DRAM
// of one device (the DeviceDRAM option of the caller's Options); 0 takes
// it from the plan's device folder when it is a known board (boardOf),
// else the fit is not judged.
func (pl *Plan) Memory(dram int64) (Memory, error) {
	m := Memory{PerDevice: []DeviceBytes{}}
	switch {
	case dram > 0:
		m.DRAM, m.DRAMFrom = dram, pl.words.Of("DeviceDRAM")
	default:
		if b, ok := boardOf(pl.Device); ok {
			m.DRAM, m.DRAMFrom = b.DRAM, b.Chip
		}
	}
	n := pl.Mesh.devices()
	for i := 0; i < n; i++ {
		m.PerDevice = append(m.PerDevice, DeviceBytes{Device: i, Coord: []int{i / max(pl.Mesh.Cols, 1), i % max(pl.Mesh.Cols, 1)}})
	}
	for _, e := range pl.allEntries() {
		size, err := pieceBytes(e)
		if err != nil {
			return m, err
		}
		file := size * int64(len(e.Shards))
		if file > m.LargestFileBytes || file == m.LargestFileBytes && m.LargestFile == "" {
			m.LargestFile, m.LargestFileBytes = e.File, file
		}
		// Every device of the mesh holds one piece of every target: its
		// shard, or the whole tensor when replicated (ttnn's mesh mappers
		// place a buffer on each device).
		on := n
		if e.Devices > 0 && e.Devices < n {
			on = e.Devices
		}
		for d := 0; d < on; d++ {
			db := &m.PerDevice[d]
			db.Bytes += size
			db.Tensors++
			if size > db.LargestBytes {
				db.Largest, db.LargestBytes = e.Target, size
			}
		}
	}
	if b, ok := boardOf(pl.Device); ok && dram <= 0 && pl.Mesh.devices() > b.Chips {
		m.NotJudged = fmt.Sprintf("a %s mesh has %d devices, and %s has %d chip(s)", pl.Mesh, pl.Mesh.devices(), pl.Device, b.Chips)
	}
	if m.DRAM > 0 && m.NotJudged == "" {
		fits := true
		var worst int64
		for i := range m.PerDevice {
			h := m.DRAM - m.PerDevice[i].Bytes
			f := h >= 0
			m.PerDevice[i].Headroom, m.PerDevice[i].Fits = &h, &f
			if i == 0 || h < worst {
				worst = h
			}
			fits = fits && f
		}
		m.Fits, m.Headroom = &fits, &worst
	}
	return m, nil
}

// pieceBytes is the size of the piece of a target one device holds.
func pieceBytes(e *Entry) (int64, error) {
	dt, err := tile.ParseDType(e.DType)
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", e.Target, err)
	}
	layout, err := tile.ParseLayout(e.Layout)
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", e.Target, err)
	}
	shape := make([]int, len(e.DeviceShape))
	for i, d := range e.DeviceShape {
		if d < 0 || d > 1<<31 {
			return 0, fmt.Errorf("target %s: bad device shape %v", e.Target, e.DeviceShape)
		}
		shape[i] = int(d)
	}
	size, err := tile.ShardBytes(shape, dt, layout)
	if err != nil {
		return 0, fmt.Errorf("target %s: %w", e.Target, err)
	}
	return size, nil
}
