package tile_test

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// A 3×40 matrix packed as BFLOAT8_B tiles: padded to 32×64, two tiles of
// 64 shared exponents and 1024 codes each. A face row (16 values) shares
// the exponent of its largest value, so next to 100 the small values keep
// only whole units.
func Example() {
	h, w := 3, 40
	src := make([]float32, h*w)
	for i := range src {
		src[i] = float32(i) / 8
	}
	src[16], src[17], src[18] = 100, 0.3, 1.7
	buf := make([]byte, tile.TilesBytes(tile.BFLOAT8_B, h, w))
	n, err := tile.PackTiles(tile.BFLOAT8_B, buf, src, h, w)
	if err != nil {
		panic(err)
	}
	back := make([]float32, h*w)
	if err := tile.UnpackTiles(tile.BFLOAT8_B, back, buf, h, w); err != nil {
		panic(err)
	}
	fmt.Println(n, "bytes")
	for _, i := range []int{1, 16, 17, 18, 119} {
		fmt.Println(src[i], "->", back[i])
	}
	size, _ := tile.ShardBytes([]int{5120, 6144}, tile.BFLOAT8_B, tile.TILE)
	fmt.Println("a 5120×6144 BFLOAT8_B shard:", size, "bytes")
	// Output:
	// 2176 bytes
	// 0.125 -> 0.125
	// 100 -> 100
	// 0.3 -> 0
	// 1.7 -> 2
	// 14.875 -> 14.875
	// a 5120×6144 BFLOAT8_B shard: 33423360 bytes
}
