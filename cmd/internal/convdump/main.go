// Command convdump exposes the float conversions of package ckpt that no
// command writes on their own, for the interop suite (.ci/interop) to
// compare with numpy and ml_dtypes:
//
//	convdump e4m3 IN OUT
//	    IN holds little-endian float32 values; OUT gets one numfmt.EncodeE4M3
//	    code per value.
//	convdump quant ROWS COLS BM BN SCALE_DTYPE IN CODES SCALES [RECIPE]
//	    IN holds a row-major ROWS×COLS float32 matrix; numfmt.QuantizeBlockFP8
//	    (or the block-FP8 recipe named RECIPE: transformers, deepseek-v3,
//	    ...) with [BM, BN] blocks writes its F8_E4M3 codes to CODES and its
//	    block scales (already rounded to SCALE_DTYPE: F32, BF16, F16 or
//	    F8_E8M0) as little-endian float32 to SCALES.
//	convdump decode DTYPE IN OUT
//	    IN holds raw values of DTYPE (e.g. F8_E5M2); OUT gets them as
//	    little-endian float32 (numfmt.DecodeFloat32), for codes that extract
//	    refuses to read without a scale.
//
// Exit status 2 on a bad command line or an I/O error. It imports nothing
// of the project but package ckpt.
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "convdump:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: convdump e4m3 IN OUT | convdump quant ROWS COLS BM BN SCALE_DTYPE IN CODES SCALES [RECIPE] | convdump decode DTYPE IN OUT")
	}
	switch args[0] {
	case "e4m3":
		if len(args) != 3 {
			return fmt.Errorf("usage: convdump e4m3 IN OUT")
		}
		in, err := readF32(args[1])
		if err != nil {
			return err
		}
		out := make([]byte, len(in))
		for i, v := range in {
			out[i] = numfmt.EncodeE4M3(v)
		}
		return os.WriteFile(args[2], out, 0o644)
	case "quant":
		if len(args) != 9 && len(args) != 10 {
			return fmt.Errorf("usage: convdump quant ROWS COLS BM BN SCALE_DTYPE IN CODES SCALES [RECIPE]")
		}
		var dims [4]int64
		for i := range dims {
			v, err := strconv.ParseInt(args[1+i], 10, 64)
			if err != nil || v <= 0 {
				return fmt.Errorf("invalid dimension %q", args[1+i])
			}
			dims[i] = v
		}
		rows, cols, bm, bn := dims[0], dims[1], dims[2], dims[3]
		sdt := numfmt.DType(args[5])
		if !ckpt.IsBlockScaleDType(sdt) {
			return fmt.Errorf("scale dtype %q: want F32, BF16, F16 or F8_E8M0", args[5])
		}
		w, err := readF32(args[6])
		if err != nil {
			return err
		}
		if int64(len(w)) != rows*cols {
			return fmt.Errorf("%s holds %d values, want %d×%d", args[6], len(w), rows, cols)
		}
		codes := make([]byte, rows*cols)
		scales := make([]float32, ((rows+bm-1)/bm)*((cols+bn-1)/bn))
		recipe := "ckpt"
		if len(args) == 10 {
			recipe = args[9]
		}
		r, ok := numfmt.ParseFP8Recipe(recipe)
		if !ok {
			return fmt.Errorf("unknown block-FP8 recipe %q", recipe)
		}
		numfmt.QuantizeBlockFP8Recipe(r, w, rows, cols, bm, bn, sdt, codes, scales)
		if err := os.WriteFile(args[7], codes, 0o644); err != nil {
			return err
		}
		raw := make([]byte, 4*len(scales))
		for i, s := range scales {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(s))
		}
		return os.WriteFile(args[8], raw, 0o644)
	case "decode":
		if len(args) != 4 {
			return fmt.Errorf("usage: convdump decode DTYPE IN OUT")
		}
		dt := numfmt.DType(args[1])
		raw, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		bits := dt.Bits()
		if !dt.IsFloat() || bits == 0 || len(raw)*8%bits != 0 {
			return fmt.Errorf("dtype %q: want a float dtype ckpt decodes, and whole values in %s", args[1], args[2])
		}
		vals := make([]float32, len(raw)*8/bits)
		if err := numfmt.DecodeFloat32(dt, raw, vals); err != nil {
			return err
		}
		out := make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
		}
		return os.WriteFile(args[3], out, 0o644)
	}
	return fmt.Errorf("unknown mode %q (want e4m3, quant or decode)", args[0])
}

func readF32(path string) ([]float32, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw)%4 != 0 {
		return nil, fmt.Errorf("%s: %d bytes is not a whole number of float32 values", path, len(raw))
	}
	out := make([]float32, len(raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return out, nil
}
