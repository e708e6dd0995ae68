package diff

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// goAsmLine is a value the generator (_asm/layout.go) wrote into a kernel
// in place of go_asm.h, which avo cannot include.
var goAsmLine = regexp.MustCompile(`(?m)^\s*// go_asm\.h: (\w+) = (-?\d+)$`)

// TestGoAsmLayout checks the struct offsets, sizes and constants that the
// generated kernels use (_asm/layout.go writes them into each .s file as
// comments) against the package's types: a change of lanes, e4m3Block, e4m3Lanes,
// e4m3Sums or partial, or of the e4m3Class values, fails here until
// layout.go follows it and the files are regenerated.
func TestGoAsmLayout(t *testing.T) {
	var (
		l  lanes
		k  e4m3Block
		ln e4m3Lanes
		s  e4m3Sums
		p  partial
	)
	want := map[string]uintptr{
		"lanes_ss": unsafe.Offsetof(l.ss),
		"lanes_nb": unsafe.Offsetof(l.nb),
		"lanes_nf": unsafe.Offsetof(l.nf),
		"lanes_d":  unsafe.Offsetof(l.d),
		"lanes_mx": unsafe.Offsetof(l.mx),

		"e4m3Lanes__size":    unsafe.Sizeof(ln),
		"e4m3Lanes_bb":       unsafe.Offsetof(ln.bb),
		"e4m3Lanes_ff":       unsafe.Offsetof(ln.ff),
		"e4m3Lanes_bf":       unsafe.Offsetof(ln.bf),
		"e4m3Lanes_mx":       unsafe.Offsetof(ln.mx),
		"e4m3Lanes_changed":  unsafe.Offsetof(ln.changed),
		"e4m3Lanes_zeroSign": unsafe.Offsetof(ln.zeroSign),

		"const_e4m3Same": uintptr(e4m3Same),
		"const_e4m3Diff": uintptr(e4m3Diff),

		"e4m3Block__size":    unsafe.Sizeof(k),
		"e4m3Block_class":    unsafe.Offsetof(k.class),
		"e4m3Block_kb":       unsafe.Offsetof(k.kb),
		"e4m3Block_kf":       unsafe.Offsetof(k.kf),
		"e4m3Block_bb":       unsafe.Offsetof(k.bb),
		"e4m3Block_ff":       unsafe.Offsetof(k.ff),
		"e4m3Block_bf":       unsafe.Offsetof(k.bf),
		"e4m3Block_mxs":      unsafe.Offsetof(k.mxs),
		"e4m3Block_mbb":      unsafe.Offsetof(k.mbb),
		"e4m3Block_mff":      unsafe.Offsetof(k.mff),
		"e4m3Block_cross2":   unsafe.Offsetof(k.cross2),
		"e4m3Block_crossNeg": unsafe.Offsetof(k.crossNeg),
		"e4m3Block_unit":     unsafe.Offsetof(k.unit),

		"e4m3Sums__size":    unsafe.Sizeof(s),
		"e4m3Sums_bb":       unsafe.Offsetof(s.bb),
		"e4m3Sums_ff":       unsafe.Offsetof(s.ff),
		"e4m3Sums_bf":       unsafe.Offsetof(s.bf),
		"e4m3Sums_mx":       unsafe.Offsetof(s.mx),
		"e4m3Sums_changed":  unsafe.Offsetof(s.changed),
		"e4m3Sums_zeroSign": unsafe.Offsetof(s.zeroSign),

		"partial_changed":   unsafe.Offsetof(p.changed),
		"partial_maxAbs":    unsafe.Offsetof(p.maxAbs),
		"partial_sumSqDiff": unsafe.Offsetof(p.sumSqDiff),
		"partial_normB":     unsafe.Offsetof(p.normB),
		"partial_normF":     unsafe.Offsetof(p.normF),
		"partial_dot":       unsafe.Offsetof(p.dot),
		"partial_zeroSign":  unsafe.Offsetof(p.zeroSign),
	}
	files, err := filepath.Glob("*_amd64.s")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	got := map[string]uintptr{}
	for _, name := range files {
		src, err := os.ReadFile(name)
		require.NoError(t, err)
		for _, m := range goAsmLine.FindAllStringSubmatch(string(src), -1) {
			v, err := strconv.ParseUint(m[2], 10, 64)
			require.NoError(t, err, "%s: %s", name, m[0])
			if old, ok := got[m[1]]; ok {
				require.Equal(t, old, uintptr(v), "%s: %s differs from another file", name, m[1])
			}
			got[m[1]] = uintptr(v)
		}
	}
	// Every value the files use is checked, and every value checked is
	// one a file uses (a name the generator dropped shows here too).
	require.Equal(t, want, got)
}
