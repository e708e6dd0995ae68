package tile

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenDir holds the vectors packed by tt-metal's own host packer
// (testdata/ttbfp/README.txt says how they were made).
func goldenDir(testing.TB) string {
	return filepath.Join("testdata", "ttbfp")
}

func readGolden(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(goldenDir(t), name))
	require.NoError(t, err)
	return b
}

func bytesToF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func f32ToBytes(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

type goldenCase struct {
	name string
	h, w int
	bf16 bool // has .input.bf16 and .tile.bf16
}

var goldenCases = []goldenCase{
	{"mixed_32x64", 32, 64, false},
	{"order_probe_64x64", 64, 64, false},
	{"randn_bf16_64x32", 64, 32, true},
}

var bfpFormats = []struct {
	ext string
	dt  DType
}{{"bfp8", BFLOAT8_B}, {"bfp4", BFLOAT4_B}}

func TestGoldenPack(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases {
		for _, f := range bfpFormats {
			t.Run(c.name+"."+f.ext, func(t *testing.T) {
				t.Parallel()
				in := bytesToF32(readGolden(t, c.name+".input.f32"))
				want := readGolden(t, c.name+"."+f.ext)
				require.Len(t, want, TilesBytes(f.dt, c.h, c.w))

				got := make([]byte, len(want))
				n, err := PackTiles(f.dt, got, in, c.h, c.w)
				require.NoError(t, err)
				require.Equal(t, len(want), n)
				require.Equal(t, want, got, "packed from f32")
			})
		}
	}
}

func TestGoldenDecode(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases {
		for _, f := range bfpFormats {
			t.Run(c.name+"."+f.ext, func(t *testing.T) {
				t.Parallel()
				packed := readGolden(t, c.name+"."+f.ext)
				want := readGolden(t, c.name+"."+f.ext+".decoded.f32")
				got := make([]float32, c.h*c.w)
				require.NoError(t, UnpackTiles(f.dt, got, packed, c.h, c.w))
				require.Equal(t, want, f32ToBytes(got))
			})
		}
	}
}

func TestGoldenTileOrder(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			inRaw := readGolden(t, c.name+".input.f32")
			in := bytesToF32(inRaw)
			want := readGolden(t, c.name+".tile.f32")

			packed := make([]byte, TilesBytes(FLOAT32, c.h, c.w))
			_, err := PackTiles(FLOAT32, packed, in, c.h, c.w)
			require.NoError(t, err)
			require.Equal(t, want, packed, "PackTiles FLOAT32")

			back := make([]float32, c.h*c.w)
			require.NoError(t, UnpackTiles(FLOAT32, back, packed, c.h, c.w))
			require.Equal(t, inRaw, f32ToBytes(back), "UnpackTiles FLOAT32")

			if !c.bf16 {
				return
			}
			wantb := readGolden(t, c.name+".tile.bf16")
			// The f32 input holds exactly the bf16 values, so rounding is exact.
			_, err = PackTiles(BFLOAT16, packed[:len(wantb)], in, c.h, c.w)
			require.NoError(t, err)
			require.Equal(t, wantb, packed[:len(wantb)], "PackTiles BFLOAT16")
		})
	}
}

// legacyCode encodes one value the way the older tt-metal packer did: like
// the current rule, except that only exact zeros give code 0, so a denormal
// (exponent field 0) is treated as (mantissa|1<<23) >> E.
func legacyCode(b, e uint32, dt DType) uint32 {
	if b&0x7fffffff == 0 {
		return 0
	}
	drop, limit, sign := uint32(17), uint32(127), b>>24&0x80
	if dt == BFLOAT4_B {
		drop, limit, sign = 21, 7, b>>28&0x8
	}
	m := (b&0x7fffff | 0x800000) >> (e - b>>23&0xff)
	m = min((m+(1<<(drop-1)-1)+(m>>drop)&1)>>drop, limit)
	if m != 0 {
		m |= sign
	}
	return m
}

// TestGoldenLegacyNoFlush documents the .legacy_noflush files: an older
// tt-metal packer did not flush values with exponent field 0 (denormals) to
// code 0. Re-encoding with that rule (legacyCode) reproduces the legacy files
// byte for byte, and they differ from the current bytes only in face rows of
// matrix row 2 of mixed_32x64 that hold a denormal large enough to survive
// the shift. We write the current (flushing) bytes.
func TestGoldenLegacyNoFlush(t *testing.T) {
	t.Parallel()
	for _, f := range bfpFormats {
		t.Run(f.ext, func(t *testing.T) {
			t.Parallel()
			cur := readGolden(t, "mixed_32x64."+f.ext)
			old := readGolden(t, "mixed_32x64."+f.ext+".legacy_noflush")
			require.Len(t, old, len(cur))
			in := bytesToF32(readGolden(t, "mixed_32x64.input.f32"))

			legacy := make([]byte, len(cur))
			_, err := PackTiles(f.dt, legacy, in, 32, 64)
			require.NoError(t, err)
			tb := f.dt.TileBytes()
			differing := map[int]bool{}
			for tile := range 2 {
				for r := range FaceRows {
					fr, fc := FaceRowOrigin(r)
					vals := in[fr*64+tile*32+fc : fr*64+tile*32+fc+FaceDim]
					e := uint32(legacy[tile*tb+r])
					codes := legacy[tile*tb+FaceRows:]
					for i, v := range vals {
						c := legacyCode(math.Float32bits(v), e, f.dt)
						if f.dt == BFLOAT8_B {
							codes[r*FaceDim+i] = byte(c)
						} else {
							shift := 4 * (i % 2)
							p := &codes[r*FaceDim/2+i/2]
							*p = *p&^(0xf<<shift) | byte(c)<<shift
						}
					}
				}
			}
			require.Equal(t, old, legacy, "legacy rule reproduces .legacy_noflush")
			for i := range cur {
				if cur[i] != old[i] {
					differing[i] = true
				}
			}
			require.NotEmpty(t, differing)
			codeBytes := (tb - FaceRows) / FaceRows
			for i := range differing {
				tile, off := i/tb, i%tb
				require.GreaterOrEqual(t, off, FaceRows, "exponent byte %d of tile %d differs", off, tile)
				fr, _ := FaceRowOrigin((off - FaceRows) / codeBytes)
				require.Equal(t, 2, fr, "byte %d of tile %d is not in matrix row 2", off, tile)
			}
		})
	}
}
