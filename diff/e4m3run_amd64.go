//go:build amd64 && !purego

package diff

//go:generate go run -C _asm . -out ../e4m3run_amd64.s
//go:generate go run -C _asm . -out ../e4m3blocks512_amd64.s

import (
	"math"

	"golang.org/x/sys/cpu"
)

// useAVX512 says whether e4m3BlocksAVX512 runs on this CPU: AVX-512 F, BW,
// DQ, VL and VBMI, besides the AVX2 and FMA3 of the other kernels.
var useAVX512 = useFMA && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ &&
	cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VBMI

// e4m3Best is the fastest kernel this CPU runs.
var e4m3Best = func() e4m3Kernel {
	switch {
	case useAVX512:
		return e4m3KernelAVX512
	case useFMA:
		return e4m3KernelAVX2
	}
	return e4m3KernelGo
}()

// e4m3Kernels are the kernels this CPU runs, the Go loop first (tests
// hold each against it).
func e4m3Kernels() []e4m3Kernel {
	ks := []e4m3Kernel{e4m3KernelGo}
	if useFMA {
		ks = append(ks, e4m3KernelAVX2)
	}
	if useAVX512 {
		ks = append(ks, e4m3KernelAVX512)
	}
	return ks
}

// e4m3Run adds the statistics of the code pairs (b[i], f[i]) in block k
// (not e4m3Generic) into o like e4m3RunGo under k's scales, with the same
// results bit for bit (the sums are exact in any order, see e4m3exact.go;
// TestE4M3Run).
func e4m3Run(b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
	return e4m3RunWith(e4m3Best, b, f, k, o)
}

// e4m3RunWith is e4m3Run with kernel kern (one that this CPU runs): the
// multiples of 64 pairs go through e4m3BlocksAVX512 as one block, those of
// 32 through e4m3BlocksAVX2, the tail through the Go loop.
func e4m3RunWith(kern e4m3Kernel, b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
	same := k.class == e4m3Same
	f = f[:len(b)]
	if kern == e4m3KernelAVX512 {
		if n := len(b) &^ 63; n > 0 {
			var t e4m3Sums
			if e4m3BlocksAVX512(&b[0], &f[0], n, k, 1, &t, &e4m3Tab, nil) == 0 {
				return false
			}
			o.add(&t)
			b, f = b[n:], f[n:]
		}
	}
	if kern != e4m3KernelGo {
		if n := len(b) &^ 31; n > 0 {
			var l e4m3Lanes
			if e4m3BlocksAVX2(&b[0], &f[0], n, k, 1, &l) == 0 {
				return false
			}
			t := l.sum()
			o.add(&t)
			b, f = b[n:], f[n:]
		}
	}
	if len(b) == 0 {
		return true
	}
	return e4m3RunGo(b, f, same, k.kb, k.kf, o)
}

// e4m3BlocksWith is e4m3BlocksGo, bit for bit, with kernel kern (one
// that this CPU runs; TestE4M3Blocks): e4m3BlocksAVX512 for bn a multiple
// of 64, e4m3BlocksAVX2 (into lanes of its own, added up) for bn a
// multiple of 32, else the Go loop.
func e4m3BlocksWith(kern e4m3Kernel, b, f []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	if kern == e4m3KernelGo || bn <= 0 || bn%32 != 0 || len(k) == 0 {
		return e4m3BlocksGo(b, f, bn, k, out)
	}
	n := len(k) * bn
	b, f, out = b[:n], f[:n], out[:len(k)]
	if kern == e4m3KernelAVX512 && bn%64 == 0 {
		return e4m3BlocksAVX512(&b[0], &f[0], bn, &k[0], len(k), &out[0], &e4m3Tab, nil)
	}
	l := make([]e4m3Lanes, len(k))
	done := e4m3BlocksAVX2(&b[0], &f[0], bn, &k[0], len(k), &l[0])
	for j := range done {
		out[j] = l[j].sum()
	}
	return done
}

// e4m3BlocksInto adds the sums of len(k) whole scale blocks of bn code
// pairs each (e4m3BlocksGo) into the lanes out[j], with the fastest
// kernel of this CPU (as e4m3BlocksWith chooses it): the AVX2 one adds its
// lanes into them itself, the others' sums (through tmp, len(k) of them)
// go into lane 0. It stops,
// like e4m3BlocksGo, at the first block that is e4m3Generic or holds a
// NaN code, and returns the number of blocks done (out from there on
// untouched).
func e4m3BlocksInto(b, f []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	return e4m3BlocksIntoWith(e4m3Best, b, f, bn, k, out, tmp)
}

// e4m3BlocksIntoWith is e4m3BlocksInto with kernel kern (one that this
// CPU runs).
func e4m3BlocksIntoWith(kern e4m3Kernel, b, f []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	if kern != e4m3KernelGo && bn > 0 && bn%32 == 0 && len(k) > 0 && (kern == e4m3KernelAVX2 || bn%64 != 0) {
		n := len(k) * bn
		b, f, out = b[:n], f[:n], out[:len(k)]
		return e4m3BlocksAVX2(&b[0], &f[0], bn, &k[0], len(k), &out[0])
	}
	done := e4m3BlocksWith(kern, b, f, bn, k, tmp)
	e4m3AddInto(out, tmp[:done])
	return done
}

// e4m3NormInto is e4m3BlocksInto for a side compared with itself (f = b;
// normChunk), with the same sums bit for bit: where the best kernel is
// the AVX2 one, e4m3NormAVX2 computes only Σv² of the blocks of one scale
// (TestE4M3Norm); elsewhere, and from a block of two scales on,
// e4m3BlocksIntoWith.
func e4m3NormInto(b []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	return e4m3NormIntoWith(e4m3Best, b, bn, k, out, tmp)
}

// e4m3NormIntoWith is e4m3NormInto with kernel kern (one that this CPU
// runs).
func e4m3NormIntoWith(kern e4m3Kernel, b []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	done := 0
	if kern == e4m3KernelAVX2 && bn > 0 && bn%32 == 0 && len(k) > 0 {
		n := len(k) * bn
		b, out = b[:n], out[:len(k)]
		done = e4m3NormAVX2(&b[0], bn, &k[0], len(k), &out[0])
		if done == len(k) || k[done].class == e4m3Same {
			return done // all, or a NaN code: the caller decodes the block
		}
	}
	return done + e4m3BlocksIntoWith(kern, b[done*bn:], b[done*bn:], bn, k[done:], out[done:], tmp[done:])
}

// e4m3NormAVX2 is e4m3BlocksAVX2 for f = b on blocks of one scale: it
// returns at the first block that is not e4m3Same or holds a NaN code.
//
//go:noescape
func e4m3NormAVX2(b *byte, bn int, k *e4m3Block, nk int, out *e4m3Lanes) int

// e4m3BlocksAVX2 is e4m3BlocksGo on the nk blocks of bn pairs at b and f
// (bn a positive multiple of 32 up to e4m3RunMax, nk > 0), descriptors at
// k, its sums added into the lanes out[j] (e4m3Lanes): one call runs
// them all, the constants staying in registers from block to block.
//
//go:noescape
func e4m3BlocksAVX2(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Lanes) int

// e4m3BlocksAVX512 is e4m3BlocksGo in 512-bit vectors for bn a positive
// multiple of 64 (up to e4m3RunMax), decoding through tab (e4m3Tab): it
// overwrites out[j] with block j's sums (not lanes); with p not nil it
// also adds each block done into *p as p.addE4M3 would, which only the
// tests use since the fold (e4m3fold.go) adds blocks once per band.
//
//go:noescape
func e4m3BlocksAVX512(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Sums, tab *[256]byte, p *partial) int

// e4m3Tab holds the top two bytes of the float64 value of every F8_E4M3
// magnitude m (code & 0x7f), whose other bits are zero: the low byte at
// [m], the high byte at [128+m]; the NaN magnitude 0x7f gets those of a
// float64 NaN (TestE4M3Tab).
var e4m3Tab = func() [256]byte {
	var t [256]byte
	for m := range 128 {
		u := uint64(0x7ff8) << 48 // NaN
		if m != 0x7f {
			u = math.Float64bits(e4m3Values[m])
		}
		t[m], t[128+m] = byte(u>>48), byte(u>>56)
	}
	return t
}()
