//go:build amd64 && !purego

package diff

// e4m3Run adds the statistics of the code pairs (b[i], f[i]) in block k
// (not e4m3Generic) into o like e4m3RunGo under k's scales, with the same
// results bit for bit: with AVX2 and FMA3 the multiples of 32 go through
// e4m3BlocksAVX2 as one block, the tail through the Go loop (the sums are
// exact in any order, see e4m3exact.go; TestE4M3Run).
func e4m3Run(b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
	n := len(b) &^ 31
	same := k.class == e4m3Same
	if !useFMA || n == 0 {
		return e4m3RunGo(b, f, same, k.kb, k.kf, o)
	}
	f = f[:len(b)]
	var t e4m3Sums
	if e4m3BlocksAVX2(&b[0], &f[0], n, k, 1, &t) == 0 {
		return false
	}
	o.add(&t)
	if n == len(b) {
		return true
	}
	return e4m3RunGo(b[n:], f[n:], same, k.kb, k.kf, o)
}

// e4m3Blocks is e4m3BlocksGo, bit for bit: with AVX2 and FMA3 and bn a
// multiple of 32, one call of e4m3BlocksAVX2 runs the blocks
// (TestE4M3Blocks).
func e4m3Blocks(b, f []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	if !useFMA || bn <= 0 || bn%32 != 0 || len(k) == 0 {
		return e4m3BlocksGo(b, f, bn, k, out)
	}
	n := len(k) * bn
	b, f, out = b[:n], f[:n], out[:len(k)]
	return e4m3BlocksAVX2(&b[0], &f[0], bn, &k[0], len(k), &out[0])
}

// e4m3BlocksAVX2 is e4m3BlocksGo on the nk blocks of bn pairs at b and f
// (bn a positive multiple of 32 up to e4m3RunMax, nk > 0), descriptors at
// k, sums to out: one call runs them all, the constants staying in
// registers from block to block.
//
//go:noescape
func e4m3BlocksAVX2(b, f *byte, bn int, k *e4m3Block, nk int, out *e4m3Sums) int

// add adds the sums t of more pairs of the run into o.
func (o *e4m3Sums) add(t *e4m3Sums) {
	o.bb += t.bb
	o.ff += t.ff
	o.bf += t.bf
	if t.mx > o.mx {
		o.mx = t.mx
	}
	o.changed += t.changed
	o.zeroSign += t.zeroSign
}
