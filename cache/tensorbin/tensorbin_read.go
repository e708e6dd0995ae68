package tensorbin

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// MaxHeaderSize is the largest header (the u64 at the start of a file:
// FlatBuffer plus padding) that the reader accepts.
const MaxHeaderSize = maxHeaderFlatbuffer

// ReadTensorbinHeader parses the header of a .tensorbin file of `size` bytes
// read through r. Every offset is bounds-checked before use, so malformed
// input yields an error (naming the file, when r has a Name method like
// *os.File, and the byte offset) and never a panic. Shard buffers are checked
// to lie inside the file.
func ReadTensorbinHeader(r io.ReaderAt, size int64) (*Header, error) {
	name := "tensorbin"
	if n, ok := r.(interface{ Name() string }); ok {
		name = n.Name()
	}
	h, err := readHeader(r, size)
	if err != nil {
		return nil, fmt.Errorf("reading header of %s: %w", name, err)
	}
	return h, nil
}

// ReadTensorbinFile opens path and parses its header (see
// ReadTensorbinHeader).
func ReadTensorbinFile(path string) (*Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading header of %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading header of %s: %w", path, err)
	}
	return ReadTensorbinHeader(f, st.Size())
}

// ShardSection returns a reader over the bytes of shard i (0 <= i <
// len(h.Shards), else it panics like an index out of range) of a file whose
// header h came from ReadTensorbinHeader, which checked the bounds.
func ShardSection(r io.ReaderAt, h *Header, i int) *io.SectionReader {
	s := h.Shards[i]
	return io.NewSectionReader(r, int64(h.DataOffset+s.Offset), int64(s.Size))
}

func readHeader(r io.ReaderAt, size int64) (*Header, error) {
	if size < 8 {
		return nil, fmt.Errorf("byte 0: file of %d bytes is too short for the header size", size)
	}
	var hs [8]byte
	if _, err := r.ReadAt(hs[:], 0); err != nil {
		return nil, fmt.Errorf("byte 0: %w", err)
	}
	hsize := binary.LittleEndian.Uint64(hs[:])
	if hsize > uint64(size-8) {
		return nil, fmt.Errorf("byte 0: header size %d exceeds the %d bytes after it", hsize, size-8)
	}
	if hsize > maxHeaderFlatbuffer {
		return nil, fmt.Errorf("byte 0: header size %d exceeds the limit %d", hsize, maxHeaderFlatbuffer)
	}
	if hsize < 8 {
		return nil, fmt.Errorf("byte 0: header size %d is too small", hsize)
	}
	buf := make([]byte, hsize)
	if _, err := r.ReadAt(buf, 8); err != nil {
		return nil, fmt.Errorf("byte 8: %w", err)
	}
	f := &fbuf{buf: buf, base: 8}
	h := &Header{HeaderSize: hsize, DataOffset: 8 + hsize}
	if err := decodeTensor(f, h); err != nil {
		return nil, err
	}
	dataSize := uint64(size) - h.DataOffset
	for i, s := range h.Shards {
		if s.Offset > dataSize || s.Size > dataSize-s.Offset {
			return nil, fmt.Errorf("byte %d: shard %d [%d, +%d) extends past the %d-byte data region",
				h.DataOffset+s.Offset, i, s.Offset, s.Size, dataSize)
		}
	}
	return h, nil
}

func decodeTensor(f *fbuf, h *Header) error {
	root, err := f.deref(0, "root")
	if err != nil {
		return err
	}
	t, err := f.table(root, "Tensor")
	if err != nil {
		return err
	}
	spec, _, err := t.sub(0, "tensor_spec", true)
	if err != nil {
		return err
	}
	if err := decodeSpec(spec, &h.Spec); err != nil {
		return err
	}
	mesh, _, err := t.sub(1, "mesh_shape", true)
	if err != nil {
		return err
	}
	if h.MeshShape, err = mesh.uint32s(0, "mesh_shape.dimensions", maxRank); err != nil {
		return err
	}
	shards, err := t.tables(2, "shards")
	if err != nil {
		return err
	}
	for _, st := range shards {
		s, err := decodeShard(st)
		if err != nil {
			return err
		}
		h.Shards = append(h.Shards, s)
	}
	topo, ok, err := t.sub(3, "tensor_topology", false)
	if err != nil {
		return err
	}
	if ok {
		h.Topology = &Topology{}
		if err := decodeTopology(topo, h.Topology); err != nil {
			return err
		}
	}
	return nil
}

func decodeSpec(t table, s *TensorSpec) error {
	var err error
	if s.Shape, err = t.uint32s(0, "tensor_spec.shape", maxRank); err != nil {
		return err
	}
	l, _, err := t.sub(1, "tensor_layout", true)
	if err != nil {
		return err
	}
	dt, err := l.u8(0)
	if err != nil {
		return err
	}
	s.DType = tile.DType(dt)
	pcType, err := l.u8(1)
	if err != nil {
		return err
	}
	pc, _, err := l.sub(2, "page_config", true)
	if err != nil {
		return err
	}
	switch pcType {
	case pageConfigRowMajor:
		s.Layout = tile.ROW_MAJOR
	case pageConfigTile:
		s.Layout = tile.TILE
		tile, _, err := pc.sub(0, "tile", true)
		if err != nil {
			return err
		}
		if s.Tile.H, err = tile.u32(0); err != nil {
			return err
		}
		if s.Tile.W, err = tile.u32(1); err != nil {
			return err
		}
		tr, err := tile.u8(2)
		if err != nil {
			return err
		}
		s.Tile.Transpose = tr != 0
	default:
		return l.f.errorf(l.pos, "unknown page_config type %d", pcType)
	}
	mem, ok, err := l.sub(3, "memory_config", false)
	if err != nil {
		return err
	}
	if ok {
		if err := decodeMemoryConfig(mem, &s.Memory); err != nil {
			return err
		}
	}
	s.Alignment, err = l.uint32s(4, "alignment", maxRank)
	return err
}

func decodeMemoryConfig(t table, m *MemoryConfig) error {
	ml, err := t.u16(0)
	if err != nil {
		return err
	}
	bt, err := t.u16(1)
	if err != nil {
		return err
	}
	m.Layout, m.Buffer = MemoryLayout(ml), BufferType(bt)
	ss, ok, err := t.sub(2, "shard_spec", false)
	if err != nil {
		return err
	}
	if ok {
		m.ShardSpec = &ShardSpec{}
		grid, _, err := ss.sub(0, "shard_spec.grid", true)
		if err != nil {
			return err
		}
		if m.ShardSpec.Grid, err = decodeCoreRangeSet(grid); err != nil {
			return err
		}
		if m.ShardSpec.ShapeH, err = ss.u32(1); err != nil {
			return err
		}
		if m.ShardSpec.ShapeW, err = ss.u32(2); err != nil {
			return err
		}
		o, err := ss.u8(3)
		if err != nil {
			return err
		}
		m.ShardSpec.Orientation = ShardOrientation(o)
	}
	nd, ok, err := t.sub(3, "nd_shard_spec", false)
	if err != nil {
		return err
	}
	if ok {
		m.NdShardSpec = &NdShardSpec{}
		if m.NdShardSpec.ShardShape, err = nd.uint32s(0, "nd_shard_spec.shard_shape", maxRank); err != nil {
			return err
		}
		grid, _, err := nd.sub(1, "nd_shard_spec.grid", true)
		if err != nil {
			return err
		}
		if m.NdShardSpec.Grid, err = decodeCoreRangeSet(grid); err != nil {
			return err
		}
		o, err := nd.u8(2)
		if err != nil {
			return err
		}
		m.NdShardSpec.Orientation = ShardOrientation(o)
		if m.NdShardSpec.DistributionStrategy, err = nd.u8(3); err != nil {
			return err
		}
	}
	c, err := t.u8(4)
	m.CreatedWithNdShardSpec = c != 0
	return err
}

func decodeCoreRangeSet(t table) ([]CoreRange, error) {
	ranges, err := t.tables(0, "ranges")
	if err != nil {
		return nil, err
	}
	out := make([]CoreRange, len(ranges))
	for i, r := range ranges {
		for slot, c := range []*CoreCoord{&out[i].Start, &out[i].End} {
			ct, _, err := r.sub(slot, "core_coord", true)
			if err != nil {
				return nil, err
			}
			x, err := ct.u32(0)
			if err != nil {
				return nil, err
			}
			y, err := ct.u32(1)
			if err != nil {
				return nil, err
			}
			c.X, c.Y = int32(x), int32(y)
		}
	}
	return out, nil
}

func decodeShard(t table) (Shard, error) {
	var s Shard
	typ, err := t.u8(0)
	if err != nil {
		return s, err
	}
	if typ != tensorBufferInline {
		return s, t.f.errorf(t.pos, "shard buffer type %d is not InlineFileStorage", typ)
	}
	p, ok, err := t.ref(1)
	if err != nil {
		return s, err
	}
	if !ok {
		return s, t.f.errorf(t.pos, "shard has no buffer")
	}
	if err := t.f.check(p, inlineStorageBytes, "InlineFileStorage"); err != nil {
		return s, err
	}
	s.Offset = binary.LittleEndian.Uint64(t.f.buf[p:])
	s.Size = binary.LittleEndian.Uint64(t.f.buf[p+8:])
	c, _, err := t.sub(2, "mesh_coordinate", true)
	if err != nil {
		return s, err
	}
	s.Coord, err = c.uint32s(0, "mesh_coordinate.values", maxRank)
	return s, err
}

func decodeTopology(t table, topo *Topology) error {
	dist, ok, err := t.sub(0, "distribution_shape", false)
	if err != nil {
		return err
	}
	if ok {
		if topo.DistributionShape, err = dist.uint32s(0, "distribution_shape.dimensions", maxRank); err != nil {
			return err
		}
	}
	pls, err := t.tables(1, "placements")
	if err != nil {
		return err
	}
	for _, p := range pls {
		typ, err := p.u8(0)
		if err != nil {
			return err
		}
		if typ > placementTypeShard {
			return p.f.errorf(p.pos, "unknown placement type %d", typ)
		}
		dim, err := p.u32(1)
		if err != nil {
			return err
		}
		topo.Placements = append(topo.Placements, Placement{Shard: typ == placementTypeShard, Dim: int32(dim)})
	}
	cs, err := t.tables(2, "mesh_coords")
	if err != nil {
		return err
	}
	for _, c := range cs {
		v, err := c.uint32s(0, "mesh_coords.values", maxRank)
		if err != nil {
			return err
		}
		topo.MeshCoords = append(topo.MeshCoords, v)
	}
	return nil
}
