//go:build amd64 && !purego

package tile

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestFaceKernels checks both face kernels (SSE2, and AVX2 where the CPU
// has it) against the Go face-row encoders: every bfloat16 value under
// every shared exponent it can have, in every lane, plus random rows (a
// face of 16 rows per call, the rest in a last, shorter one).
func TestFaceKernels(t *testing.T) {
	t.Parallel()
	type kernel func(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) uint32
	kernels := map[string]kernel{"SSE2": bfpFaceSSE2}
	if cpu.X86.HasAVX2 {
		kernels["AVX2"] = bfpFaceAVX2
	} else {
		t.Log("no AVX2 on this CPU: only the SSE2 kernel is checked")
	}
	for name, k := range kernels {
		// Rows are checked a face (16 rows) per kernel call.
		var face [FaceDim][FaceDim]uint16
		rows := 0
		flush := func() {
			if rows == 0 {
				return
			}
			var exps [FaceDim]byte
			var c8 [FaceDim][FaceDim]byte
			var c4 [FaceDim][FaceDim / 2]byte
			s8 := k(&face[0][0], 2*FaceDim, &exps[0], &c8[0][0], &bfp8Params, false, uintptr(rows))
			s4 := k(&face[0][0], 2*FaceDim, &exps[0], &c4[0][0], &bfp4Params, true, uintptr(rows))
			for i := range rows {
				row := &face[i]
				var w8 [FaceDim]byte
				var w4 [FaceDim / 2]byte
				we := bfp8FaceRowBF16Go(&w8, row)
				bfp4FaceRowBF16Go(&w4, row)
				small := we != 0 && we < minTableExp
				if s8>>i&1 == 1 != small || s4>>i&1 == 1 != small {
					t.Fatalf("%s: row %#04x of exponent %d: flags %#x %#x", name, *row, we, s8, s4)
				}
				if small {
					continue
				}
				if exps[i] != we || c8[i] != w8 || c4[i] != w4 {
					t.Fatalf("%s of %#04x: %#x %#x e=%d, want %#x %#x e=%d", name, *row, c8[i], c4[i], exps[i], w8, w4, we)
				}
			}
			rows = 0
		}
		check := func(row *[FaceDim]uint16) {
			face[rows] = *row
			rows++
			if rows == FaceDim {
				flush()
			}
		}
		kernelRows(13, check)
		flush()
	}
}
