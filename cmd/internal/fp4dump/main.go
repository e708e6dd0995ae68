// Command fp4dump exposes the codecs of package numfmt for the quantisation
// schemes (E2M1, E8M0, MXFP4, NVFP4) for the interop suite (.ci/interop
// test_schemes.py) to compare with ml_dtypes and numpy:
//
//	fp4dump e2m1 IN OUT
//	    IN holds packed E2M1 bytes; OUT gets two little-endian float32
//	    values per byte (numfmt.UnpackE2M1: low nibble first).
//	fp4dump e8m0 IN OUT
//	    IN holds E8M0 codes; OUT gets one float32 per code.
//	fp4dump mxfp4 BLOCKS SCALES OUT
//	    BLOCKS holds 16 bytes per scale in SCALES; OUT gets 32 float32
//	    values per scale (numfmt.DequantMXFP4).
//	fp4dump nvfp4 ROWS COLS GLOBAL PACKED SCALES OUT
//	    PACKED holds ROWS×COLS/2 packed E2M1 bytes, SCALES ROWS×COLS/16
//	    F8_E4M3 codes, GLOBAL is the float32 weight_scale_2; OUT gets the
//	    ROWS×COLS float32 values (numfmt.DequantNVFP4).
//
// Exit status 2 on a bad command line or an I/O error. It imports nothing
// of the project but package numfmt.
package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fp4dump:", err)
		os.Exit(2)
	}
}

const usage = "usage: fp4dump e2m1 IN OUT | fp4dump e8m0 IN OUT | fp4dump mxfp4 BLOCKS SCALES OUT | fp4dump nvfp4 ROWS COLS GLOBAL PACKED SCALES OUT"

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch {
	case args[0] == "e2m1" && len(args) == 3:
		in, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		out := make([]float32, 2*len(in))
		numfmt.UnpackE2M1(out, in)
		return writeF32(args[2], out)
	case args[0] == "e8m0" && len(args) == 3:
		in, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		out := make([]float32, len(in))
		for i, c := range in {
			out[i] = numfmt.E8M0ToFloat32(c)
		}
		return writeF32(args[2], out)
	case args[0] == "mxfp4" && len(args) == 4:
		blocks, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		scales, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		out := make([]float32, len(scales)*numfmt.MXFP4BlockSize)
		if err := numfmt.DequantMXFP4(out, blocks, scales); err != nil {
			return err
		}
		return writeF32(args[3], out)
	case args[0] == "nvfp4" && len(args) == 7:
		rows, err1 := strconv.Atoi(args[1])
		cols, err2 := strconv.Atoi(args[2])
		global, err3 := strconv.ParseFloat(args[3], 32)
		if err1 != nil || err2 != nil || err3 != nil {
			return fmt.Errorf("nvfp4: ROWS, COLS and GLOBAL must be numbers: %q %q %q", args[1], args[2], args[3])
		}
		packed, err := os.ReadFile(args[4])
		if err != nil {
			return err
		}
		scales, err := os.ReadFile(args[5])
		if err != nil {
			return err
		}
		if rows < 0 || cols < 0 || rows > 1<<20 || cols > 1<<20 {
			return fmt.Errorf("nvfp4: %d×%d is out of range", rows, cols)
		}
		out := make([]float32, rows*cols)
		if err := numfmt.DequantNVFP4(out, packed, scales, float32(global), rows, cols); err != nil {
			return err
		}
		return writeF32(args[6], out)
	}
	return errors.New(usage)
}

func writeF32(path string, vals []float32) error {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return os.WriteFile(path, b, 0o644)
}
