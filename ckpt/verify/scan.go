package verify

import (
	"encoding/binary"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// counts are the value statistics of one tensor (or one chunk of it).
type counts struct {
	n          int64 // values scanned
	nan, inf   int64
	zero, neg  int64 // scales only
	first      int64 // element index of the first bad value, -1 if none
	firstValue string
	// over counts finite scales whose product with the largest F8_E4M3
	// code overflows bf16 (scales only); overFirst (-1 if none) and
	// overValue are the first of them.
	over      int64
	overFirst int64
	overValue float32
}

func (c *counts) bad() int64 { return c.nan + c.inf + c.zero + c.neg }

func (c *counts) note(idx int64, v string) {
	if c.first < 0 {
		c.first, c.firstValue = idx, v
	}
}

// merge adds a later chunk's counts.
func (c *counts) merge(o *counts) {
	c.n += o.n
	c.nan += o.nan
	c.inf += o.inf
	c.zero += o.zero
	c.neg += o.neg
	if c.first < 0 && o.first >= 0 {
		c.first, c.firstValue = o.first, o.firstValue
	}
	if c.over == 0 && o.over > 0 {
		c.overFirst, c.overValue = o.overFirst, o.overValue
	}
	c.over += o.over
}

// scanE4M3 counts NaN codes (0x7f, 0xff) in F8_E4M3 bytes; base is the
// element index of p[0]. cleanE4M3 skips the long runs without a NaN (the
// common case); the bytes after such a run are resolved one by one, up to
// the next group boundary.
func scanE4M3(p []byte, base int64, c *counts) {
	c.n += int64(len(p))
	for i := 0; i < len(p); {
		i += cleanE4M3(p[i:])
		end := min(i+cleanGroup, len(p))
		for j := i; j < end; j++ {
			if p[j]&0x7f == 0x7f {
				c.nan++
				c.note(base+int64(j), "NaN")
			}
		}
		i = end
	}
}

// cleanE4M3Go returns the length of the longest prefix of whole 32-byte
// groups of p without an F8_E4M3 NaN code. Eight codes are tested per word
// and one test per group: adding 1 to each byte's low seven bits carries
// into bit 7 only for 0x7f.
func cleanE4M3Go(p []byte) int {
	const low7, one, high = 0x7f7f7f7f7f7f7f7f, 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+32 <= len(p); i += 32 {
		q := p[i : i+32]
		x0 := binary.LittleEndian.Uint64(q[0:8])
		x1 := binary.LittleEndian.Uint64(q[8:16])
		x2 := binary.LittleEndian.Uint64(q[16:24])
		x3 := binary.LittleEndian.Uint64(q[24:32])
		if (((x0&low7)+one)|((x1&low7)+one)|((x2&low7)+one)|((x3&low7)+one))&high != 0 {
			break
		}
	}
	return i
}

// scanHalf counts NaN and Inf in BF16 (expMask 0x7f80) or F16 (0x7c00)
// values: four lanes per step, an all-ones exponent carries into bit 15.
func scanHalf(p []byte, base int64, expMask uint16, c *counts) {
	m := uint64(expMask) * 0x0001000100010001
	lsb := uint64(expMask&-expMask) * 0x0001000100010001
	const top = 0x8000800080008000
	n := len(p) / 2
	c.n += int64(n)
	i := 0
	// 16 values per step, one test for the four words.
	for q := p[:2*n]; len(q) >= 32; q = q[32:] {
		x0 := binary.LittleEndian.Uint64(q[0:8])
		x1 := binary.LittleEndian.Uint64(q[8:16])
		x2 := binary.LittleEndian.Uint64(q[16:24])
		x3 := binary.LittleEndian.Uint64(q[24:32])
		if (((x0&m)+lsb)|((x1&m)+lsb)|((x2&m)+lsb)|((x3&m)+lsb))&top != 0 {
			for j := i; j < i+16; j++ {
				checkHalf(binary.LittleEndian.Uint16(p[2*j:]), expMask, base+int64(j), c)
			}
		}
		i += 16
	}
	for j := i; j < n; j++ {
		checkHalf(binary.LittleEndian.Uint16(p[2*j:]), expMask, base+int64(j), c)
	}
}

func checkHalf(v, expMask uint16, idx int64, c *counts) {
	if v&expMask != expMask {
		return
	}
	if v&^(expMask|0x8000) == 0 {
		c.inf++
		c.note(idx, "Inf")
	} else {
		c.nan++
		c.note(idx, "NaN")
	}
}

// scanF32 counts NaN and Inf in F32 values, two lanes per step.
func scanF32(p []byte, base int64, c *counts) {
	const m, lsb, top = 0x7f8000007f800000, 0x0080000000800000, 0x8000000080000000
	n := len(p) / 4
	c.n += int64(n)
	i := 0
	for ; i+2 <= n; i += 2 {
		x := binary.LittleEndian.Uint64(p[4*i:])
		if ((x&m)+lsb)&top == 0 {
			continue
		}
		for j := i; j < i+2; j++ {
			checkF32(binary.LittleEndian.Uint32(p[4*j:]), base+int64(j), c)
		}
	}
	for j := i; j < n; j++ {
		checkF32(binary.LittleEndian.Uint32(p[4*j:]), base+int64(j), c)
	}
}

func checkF32(v uint32, idx int64, c *counts) {
	f := math.Float32frombits(v)
	switch {
	case f != f:
		c.nan++
		c.note(idx, "NaN")
	case math.IsInf(float64(f), 0):
		c.inf++
		c.note(idx, "Inf")
	}
}

// scanF64 counts NaN and Inf in F64 values.
func scanF64(p []byte, base int64, c *counts) {
	n := len(p) / 8
	c.n += int64(n)
	for j := 0; j < n; j++ {
		f := math.Float64frombits(binary.LittleEndian.Uint64(p[8*j:]))
		switch {
		case math.IsNaN(f):
			c.nan++
			c.note(base+int64(j), "NaN")
		case math.IsInf(f, 0):
			c.inf++
			c.note(base+int64(j), "Inf")
		}
	}
}

// scanE5M2 counts NaN and Inf in F8_E5M2 codes (exponent 0x7c all ones).
func scanE5M2(p []byte, base int64, c *counts) {
	c.n += int64(len(p))
	for j, b := range p {
		if b&0x7c != 0x7c {
			continue
		}
		if b&0x03 == 0 {
			c.inf++
			c.note(base+int64(j), "Inf")
		} else {
			c.nan++
			c.note(base+int64(j), "NaN")
		}
	}
}

// scanScales decodes scale values and counts those that are not finite
// and positive.
func scanScales(dt ckpt.DType, p []byte, base int64, c *counts, tmp []float32) []float32 {
	n := len(p) * 8 / dt.Bits()
	if cap(tmp) < n {
		tmp = make([]float32, n)
	}
	tmp = tmp[:n]
	if err := ckpt.DecodeFloat32(dt, p, tmp); err != nil {
		return tmp
	}
	c.n += int64(n)
	for i, v := range tmp {
		switch {
		case v != v:
			c.nan++
			c.note(base+int64(i), "NaN")
		case math.IsInf(float64(v), 0):
			c.inf++
			c.note(base+int64(i), formatFloat(v))
		case v == 0:
			c.zero++
			c.note(base+int64(i), "0")
		case v < 0:
			c.neg++
			c.note(base+int64(i), formatFloat(v))
		case !ckpt.FiniteIn(ckpt.BF16, v*ckpt.E4M3MaxFinite):
			if c.over == 0 {
				c.overFirst, c.overValue = base+int64(i), v
			}
			c.over++
		}
	}
	return tmp
}

func formatFloat(v float32) string {
	return formatG(float64(v))
}

func formatG(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconvG(v)
}
