package main

import (
	"fmt"
	"io"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/pflag"
)

// addDeviceDRAMFlag registers --device-dram SIZE, the DRAM of one device
// that map and cache build hold the plan against, its text in dst, its
// size in v (deviceDRAM).
func addDeviceDRAMFlag(f *pflag.FlagSet, v *sizeValue, dst *string) {
	sizeFlag(f, v, dst, "device-dram", "DRAM of one device (e.g. 32GiB) to judge whether the plan fits "+
		"(default: the device folder's board when known: P100, P150, P300, P150x4, P150x8 (Blackhole), N150, N300, N150x4, T3K (Wormhole))")
}

// printMemory renders the DRAM each device holds (a grid: device,
// tensors, bytes, largest tensor, headroom), the largest file, and the
// verdict on the fit.
func printMemory(w io.Writer, format, device string, m *mapping.Memory, per []mapping.DeviceBytes) error {
	g := &output.Grid{Title: "per device (DRAM)", Header: []string{"device", "coord", "tensors", "bytes", "largest tensor", "largest bytes", "headroom"},
		Right: map[int]bool{0: true, 2: true, 3: true, 5: true, 6: true}, Sizes: map[int]bool{3: true, 5: true, 6: true}}
	for _, d := range per {
		head := ""
		if d.Headroom != nil {
			head = output.Int(*d.Headroom)
		}
		g.Rows = append(g.Rows, []string{fmt.Sprint(d.Device), fmt.Sprintf("[%d,%d]", d.Coord[0], d.Coord[1]), fmt.Sprint(d.Tensors), output.Int(d.Bytes),
			ckpt.EscapeName(d.Largest), output.Int(d.LargestBytes), head})
	}
	if err := g.Render(w, format); err != nil {
		return err
	}
	fmt.Fprintln(w)
	esc := output.EscapeFor(format) // the file and device names, copied from the plan
	device = esc(device)
	if m.LargestFile != "" {
		fmt.Fprintf(w, "largest file: %s (%s of data)\n", esc(m.LargestFile), output.Bytes(m.LargestFileBytes))
	}
	var most int64
	for _, d := range per {
		most = max(most, d.Bytes)
	}
	switch {
	case m.NotJudged != "":
		fmt.Fprintf(w, "fit not judged: %s per device, but %s\n", output.Bytes(most), esc(m.NotJudged))
	case m.Fits == nil:
		fmt.Fprintf(w, "fit not judged: %s per device, DRAM of device folder %s unknown (pass --device-dram SIZE)\n", output.Bytes(most), device)
	case *m.Fits:
		fmt.Fprintf(w, "fits: %s per device of %s DRAM (%s), headroom %s\n", output.Bytes(most), output.Bytes(m.DRAM), m.DRAMFrom, output.Bytes(*m.Headroom))
	default:
		fmt.Fprintf(w, "DOES NOT FIT: %s per device, %s DRAM (%s), short by %s\n", output.Bytes(most), output.Bytes(m.DRAM), m.DRAMFrom, output.Bytes(-*m.Headroom))
	}
	return nil
}
