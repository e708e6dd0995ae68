package main

import (
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// rawdiff writes rawdiff_amd64.s: rawSameAVX512 (and rawSameAVX2, see
// rawdiff2), the number of elements
// of esize bytes (1, 2, 4 or 8) that are equal in a and b, over n bytes
// (a positive multiple of 64): a VPCMPEQ of the element width per 64
// bytes into a mask register, POPCNT of the mask.
func rawdiff(f *file) {
	a, b := rawSameHead(f, "rawSameAVX512", "")
	// One loop per element width: the compare, the mask move of its
	// width (KMOVB for 8 qwords ... KMOVQ for 64 bytes) and its count.
	loop := func(label string, cmp func(ops ...Op), kmov func(k, r Op), count Register, last bool) {
		f.Label(label)
		f.VMOVDQU64(a, Z0)
		cmp(b, Z0, K1)
		kmov(K1, count)
		if count == RAX {
			f.POPCNTQ(RAX, RAX)
		} else {
			f.POPCNTL(EAX, EAX)
		}
		f.ADDQ(RAX, R8)
		f.ADDQ(U8(64), RDX)
		f.JNZ(LabelRef(label))
		if !last {
			f.JMP(LabelRef("ret"))
		}
	}
	loop("qwords", f.VPCMPEQQ, f.KMOVB, EAX, false)
	loop("dwords", f.VPCMPEQD, f.KMOVW, EAX, false)
	loop("words", f.VPCMPEQW, f.KMOVD, EAX, false)
	loop("bytes", f.VPCMPEQB, f.KMOVQ, RAX, true)

	f.Label("ret")
	f.MOVQ(R8, f.Ret(0))
	f.VZEROUPPER()
	f.RET()

	rawdiff2(f)
}

// rawdiff2 writes rawSameAVX2, rawSameAVX512 in 256-bit vectors for n a
// positive multiple of 32: per 32 bytes a VPCMPEQ of the element width
// and VPMOVMSKB, whose mask has esize bits set per equal element; the
// POPCNT of the masks, added up, is divided by esize at the end (a shift:
// esize is a power of two).
func rawdiff2(f *file) {
	a, b := rawSameHead(f, "rawSameAVX2", "2")
	loop := func(label string, cmp func(ops ...Op), last bool) {
		f.Label(label)
		f.VMOVDQU(a, Y0)
		cmp(b, Y0, Y0)
		f.VPMOVMSKB(Y0, EAX)
		f.POPCNTL(EAX, EAX)
		f.ADDQ(RAX, R8)
		f.ADDQ(U8(32), RDX)
		f.JNZ(LabelRef(label))
		if !last {
			f.JMP(LabelRef("ret2"))
		}
	}
	loop("qwords2", f.VPCMPEQQ, false)
	loop("dwords2", f.VPCMPEQD, false)
	loop("words2", f.VPCMPEQW, false)
	loop("bytes2", f.VPCMPEQB, true)

	f.Label("ret2")
	f.BSFQ(RCX, RCX) // log2(esize)
	f.SHRQ(CL, R8)
	f.MOVQ(R8, f.Ret(0))
	f.VZEROUPPER()
	f.RET()
}

// rawSameHead writes the head both kernels share: the arguments loaded,
// a and b pointing past their ends with RDX counting up from -n, R8 the
// count, and a jump to the loop of the element width (labels
// "bytes"+suffix, "words"+suffix, "dwords"+suffix; qwords fall through).
// It returns the operands of the loops' loads.
func rawSameHead(f *file, name, suffix string) (a, b Mem) {
	f.text(name, "func(a, b *byte, n int, esize int) int")
	f.MOVQ(f.Arg("a"), RSI)
	f.MOVQ(f.Arg("b"), RDI)
	f.MOVQ(f.Arg("n"), RDX)
	f.MOVQ(f.Arg("esize"), RCX)
	f.ADDQ(RDX, RSI)
	f.ADDQ(RDX, RDI)
	f.NEGQ(RDX)
	f.XORQ(R8, R8)
	f.CMPQ(RCX, U8(1))
	f.JEQ(LabelRef("bytes" + suffix))
	f.CMPQ(RCX, U8(2))
	f.JEQ(LabelRef("words" + suffix))
	f.CMPQ(RCX, U8(4))
	f.JEQ(LabelRef("dwords" + suffix))
	return Mem{Base: RSI, Index: RDX, Scale: 1}, Mem{Base: RDI, Index: RDX, Scale: 1}
}
