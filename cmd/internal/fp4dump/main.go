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
//	fp4dump encode-e2m1 IN OUT
//	    IN holds little-endian float32 values; OUT gets one E2M1 code per
//	    value (numfmt.EncodeE2M1).
//	fp4dump quantize-mxfp4 RECIPE IN OUT
//	    IN holds 32 float32 values per block; OUT gets the blocks' E8M0
//	    scales, then their packed codes, 16 bytes per block
//	    (numfmt.QuantizeMXFP4; RECIPE ocp-floor or triton-round-up).
//	fp4dump quantize-nvfp4 IN OUT
//	    IN holds 16 float32 values per block; OUT gets the float32
//	    weight_scale_2, the blocks' F8_E4M3 scales, then their packed
//	    codes, 8 bytes per block (numfmt.QuantizeNVFP4).
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

const usage = "usage: fp4dump e2m1 IN OUT | fp4dump e8m0 IN OUT | fp4dump mxfp4 BLOCKS SCALES OUT | fp4dump nvfp4 ROWS COLS GLOBAL PACKED SCALES OUT | " +
	"fp4dump encode-e2m1 IN OUT | fp4dump quantize-mxfp4 RECIPE IN OUT | fp4dump quantize-nvfp4 IN OUT"

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
	case args[0] == "encode-e2m1" && len(args) == 3:
		in, err := readF32(args[1])
		if err != nil {
			return err
		}
		out := make([]byte, len(in))
		for i, x := range in {
			out[i] = numfmt.EncodeE2M1(x)
		}
		return os.WriteFile(args[2], out, 0o644)
	case args[0] == "quantize-mxfp4" && len(args) == 4:
		var rec numfmt.MXFP4Recipe
		found := false
		for _, r := range numfmt.MXFP4Recipes {
			if r.String() == args[1] {
				rec, found = r, true
			}
		}
		if !found {
			return fmt.Errorf("quantize-mxfp4: unknown recipe %q", args[1])
		}
		in, err := readF32(args[2])
		if err != nil {
			return err
		}
		g := len(in) / numfmt.MXFP4BlockSize
		out := make([]byte, g+g*numfmt.MXFP4BlockBytes)
		if err := numfmt.QuantizeMXFP4(rec, in, out[g:], out[:g]); err != nil {
			return err
		}
		return os.WriteFile(args[3], out, 0o644)
	case args[0] == "quantize-nvfp4" && len(args) == 3:
		in, err := readF32(args[1])
		if err != nil {
			return err
		}
		g := len(in) / numfmt.NVFP4BlockSize
		out := make([]byte, 4+g+g*numfmt.NVFP4BlockSize/2)
		global, err := numfmt.QuantizeNVFP4(in, out[4+g:], out[4:4+g])
		if err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(out, math.Float32bits(global))
		return os.WriteFile(args[2], out, 0o644)
	}
	return errors.New(usage)
}

func readF32(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of float32 values", path, len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

func writeF32(path string, vals []float32) error {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return os.WriteFile(path, b, 0o644)
}
