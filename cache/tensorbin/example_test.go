package tensorbin_test

import (
	"bytes"
	"fmt"

	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// Example packs a 32x64 float32 matrix as BFLOAT8_B tiles split over a 1x2
// mesh (ShardTensorToMesh, dim -1), writes it as a .tensorbin and reads the
// header back.
func Example() {
	const h, w = 32, 64
	m := make([]float32, h*w)
	for i := range m {
		m[i] = float32(i%w) / 8
	}
	// Each device gets a [32, 32] column block: pack it straight from the
	// row-major matrix with a stride.
	var (
		shards [][]byte
		got    *tensorbin.Header
	)
	var sizes []uint64
	for d := range 2 {
		buf := make([]byte, tile.TilesBytes(tile.BFLOAT8_B, h, w/2))
		if _, err := tile.PackStrip(tile.BFLOAT8_B, buf, m[d*w/2:], h, w/2, w); err != nil {
			panic(err)
		}
		shards = append(shards, buf)
		sizes = append(sizes, uint64(len(buf)))
	}
	spec := tensorbin.NewTensorSpec([]int{h, w / 2}, tile.BFLOAT8_B, tile.TILE, tensorbin.InterleavedConfig())
	hdr := tensorbin.NewMeshShardedHeader(spec, -1, sizes)

	// The header, then the shards at their offsets (here back to back:
	// 1088 bytes is a multiple of the 64-byte alignment).
	prefix, err := tensorbin.EncodeHeader(&hdr)
	if err != nil {
		panic(err)
	}
	var file bytes.Buffer
	file.Write(prefix)
	for _, s := range shards {
		file.Write(s)
	}
	got, err = tensorbin.ReadTensorbinHeader(bytes.NewReader(file.Bytes()), int64(file.Len()))
	if err != nil {
		panic(err)
	}
	fmt.Println(got.Spec.DType, got.Spec.Layout)
	fmt.Println("shape", got.Spec.Shape, "mesh", got.MeshShape, "data at", got.DataOffset)
	for _, s := range got.Shards {
		fmt.Println("shard", s.Coord, "offset", s.Offset, "size", s.Size)
	}
	fmt.Printf("placements %+v\n", got.Topology.Placements)
	// Output:
	// BFLOAT8_B TILE
	// shape [32 32] mesh [1 2] data at 448
	// shard [0 0] offset 0 size 1088
	// shard [0 1] offset 1088 size 1088
	// placements [Shard(-1)]
}
