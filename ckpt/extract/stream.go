package extract

import (
	"context"
	"fmt"
	"io"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// streamer moves tensor data from the source to a writer through three
// buffers of at most chunk bytes each, allocated once per shard.
type streamer struct {
	chunk int64
	raw   []byte    // source bytes
	vals  []float32 // decoded values
	enc   []byte    // encoded output
	prog  *ckpt.Progress
	guard *ckpt.FiniteGuard // NaN/Inf in the source data
}

func newStreamer(chunk int64, prog *ckpt.Progress, guard *ckpt.FiniteGuard) *streamer {
	// Whole 8-byte words per chunk, so that chunks hold whole elements.
	return &streamer{chunk: max(chunk&^7, 8), prog: prog, guard: guard}
}

func (s *streamer) rawBuf(n int64) []byte {
	if int64(cap(s.raw)) < n {
		s.raw = make([]byte, n)
	}
	return s.raw[:n]
}

// WriteShard streams shard i of the plan to w: the 8-byte length, the
// header, then every tensor's data in the reference writer's order. No
// buffer holds more than the plan's chunk size of tensor data.
func (p *Plan) WriteShard(ctx context.Context, i int, w io.Writer) error {
	if i < 0 || i >= len(p.Shards) {
		return fmt.Errorf("shard %d out of range (%d shards)", i, len(p.Shards))
	}
	sh := &p.Shards[i]
	specs := make([]ckpt.WriteSpec, len(sh.Items))
	byName := make(map[string]*Item, len(sh.Items))
	for k, it := range sh.Items {
		specs[k] = it.WriteSpec
		byName[it.Name] = it
	}
	wr, err := ckpt.NewWriter(w, specs, p.Metadata)
	if err != nil {
		return err
	}
	s := newStreamer(p.chunk, p.progress, p.guard)
	for _, ti := range wr.Order() {
		it := byName[ti.Name]
		if err := s.item(ctx, it, wr); err != nil {
			return err
		}
		s.prog.ItemDone()
	}
	return wr.Finish()
}

func (s *streamer) item(ctx context.Context, it *Item, w io.Writer) error {
	if it.Action == Copy {
		return s.copyRaw(ctx, it.Source, w)
	}
	return s.convert(ctx, it, w)
}

// copyRaw copies the tensor's bytes unchanged.
func (s *streamer) copyRaw(ctx context.Context, t *ckpt.Tensor, w io.Writer) error {
	n := int64(t.NBytes())
	for off := int64(0); off < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf := s.rawBuf(min(n-off, s.chunk))
		if _, err := t.ReadAt(buf, off); err != nil {
			return err
		}
		if err := s.guard.Check(t, buf); err != nil {
			return err
		}
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("writing tensor %s: %w", ckpt.Quote(t.Name), err)
		}
		off += int64(len(buf))
		s.prog.Add(int64(len(buf)))
	}
	return nil
}

// subElems bounds the values converted in one pass, so that the float32
// and encoded buffers stay in the CPU cache while reads stay large.
const subElems = 32 << 10

// convert reads the tensor a chunk at a time and converts each chunk in
// cache-sized pieces: decode to float32, multiply dequantised weights by
// their block scales, encode in the output dtype (nearest even).
func (s *streamer) convert(ctx context.Context, it *Item, w io.Writer) error {
	if it.Values != nil && it.Values.Packed() {
		return s.convertRows(ctx, it, w)
	}
	t := it.Source
	var err error
	sb, db := int64(t.DType.Bits()/8), int64(it.DType.Bits()/8)
	if sb == 0 || db == 0 {
		return fmt.Errorf("tensor %s: cannot convert %s to %s", ckpt.Quote(t.Name), t.DType, it.DType)
	}
	numel := int64(t.Numel())
	per := min(max(s.chunk/sb, 1), numel)                        // elements per read
	sub := min(max(s.chunk/max(4, db), 1), per, int64(subElems)) // elements per conversion pass
	if int64(cap(s.vals)) < sub {
		s.vals = make([]float32, sub)
	}
	if int64(cap(s.enc)) < sub*db {
		s.enc = make([]byte, sub*db)
	}
	if it.Values != nil && it.Values.Scale != nil {
		if err = s.guard.CheckTensor(it.Values.Scale); err != nil {
			return err
		}
		if err = s.checkScales(it); err != nil {
			return err
		}
	}
	// Finite values may convert to Inf only when the output's range is
	// smaller (F32 to F16 or BF16, BF16 to F16): only then is the output
	// scanned, eight bytes at a time (the conversion costs far more).
	scan := it.Values == nil && ckpt.MayOverflow(t.DType, it.DType)
	var over int64
	var lut *scaleLUT
	if it.Values != nil && it.Values.Scale != nil && sb == 1 && (db == 2 || db == 4) {
		if lut, err = newScaleLUT(t.DType, it.DType, it.Values); err != nil {
			return fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
		}
	}
	for e := int64(0); e < numel; e += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := min(per, numel-e)
		raw := s.rawBuf(m * sb)
		if _, err := t.ReadAt(raw, e*sb); err != nil {
			return err
		}
		if err := s.guard.Check(t, raw); err != nil {
			return err
		}
		for k := int64(0); k < m; k += sub {
			q := min(sub, m-k)
			enc := s.enc[:q*db]
			if lut != nil {
				// Dequantising 8-bit codes: a table per block scale.
				if err := lut.convert(it.Values, e+k, raw[k:k+q], enc); err != nil {
					return fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
				}
				if _, err := w.Write(enc); err != nil {
					return fmt.Errorf("writing tensor %s: %w", ckpt.Quote(t.Name), err)
				}
				s.prog.Add(int64(len(enc)))
				continue
			}
			vals := s.vals[:q]
			var err error
			if it.Values != nil && it.Values.Blocks() != nil {
				// dequantised by numfmt.BlockScales (decode, then scale)
				err = it.Values.Blocks().Dequantize(t.DType, raw[k*sb:(k+q)*sb], e+k, vals)
			} else {
				err = ckpt.DecodeFloat32(t.DType, raw[k*sb:(k+q)*sb], vals)
			}
			if err != nil {
				return fmt.Errorf("tensor %s of %s at byte %d: %w", ckpt.Quote(t.Name), t.File.Location, t.Offset()+(e+k)*sb, err)
			}
			if err := ckpt.EncodeFloat32(it.DType, vals, enc); err != nil {
				return fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
			}
			if scan {
				if nan, inf := ckpt.CountNonFinite(it.DType, enc); nan+inf > 0 {
					// Non-finite sources stay non-finite (the guard saw them).
					sn, si := ckpt.CountNonFinite(t.DType, raw[k*sb:(k+q)*sb])
					over += nan + inf - sn - si
				}
			}
			if _, err := w.Write(enc); err != nil {
				return fmt.Errorf("writing tensor %s: %w", ckpt.Quote(t.Name), err)
			}
			s.prog.Add(int64(len(enc)))
		}
	}
	return s.guard.Overflow(t, it.DType, over, fmt.Sprintf("%s holds at most %.5g", it.DType, ckpt.MaxFinite(it.DType)))
}

// checkScales: when a block scale of a dequantised weight times the
// largest code overflows the output dtype (a test on the small scale
// tensor), the weight is read once more to count the values that do.
func (s *streamer) checkScales(it *Item) error {
	v := it.Values
	n, first := v.OverflowingScales(it.DType)
	if n == 0 {
		return nil
	}
	over, err := v.CountOverflow(it.DType)
	if err != nil {
		return err
	}
	return s.guard.Overflow(it.Source, it.DType, over, ckpt.ScaleOverflowWhy(v.Scale.Name, n, first, it.DType))
}

// convertRows dequantises a weight of packed E2M1 codes (MXFP4, NVFP4) a
// chunk of rows at a time through ckpt.Values.ReadRows (numfmt's
// dequantisers: the float32 product), then encodes each value in the
// output dtype (rounded once, nearest even). Finite values that overflow
// the output are counted for the guard.
func (s *streamer) convertRows(ctx context.Context, it *Item, w io.Writer) error {
	v, t := it.Values, it.Source
	if err := s.guard.CheckTensor(v.Scale); err != nil {
		return err
	}
	db := int64(it.DType.Bits() / 8)
	rows := max(v.ChunkRows(s.chunk), 1)
	if v.Cols == 0 || v.Rows == 0 {
		return nil
	}
	if need := rows * v.Cols; int64(cap(s.vals)) < need {
		s.vals = make([]float32, need)
	}
	if need := rows * v.Cols * db; int64(cap(s.enc)) < need {
		s.enc = make([]byte, need)
	}
	var over int64
	for r := int64(0); r < v.Rows; r += rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(rows, v.Rows-r)
		vals := s.vals[:n*v.Cols]
		raw, err := v.ReadRows(r, n, s.raw, vals)
		if err != nil {
			return fmt.Errorf("tensor %s of %s at byte %d: %w", ckpt.Quote(t.Name), t.File.Location, t.Offset()+r*v.RowBytes(), err)
		}
		s.raw = raw
		enc := s.enc[:n*v.Cols*db]
		if err := ckpt.EncodeFloat32(it.DType, vals, enc); err != nil {
			return fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
		}
		if bad := ckpt.CountNotFinite(it.DType, vals); bad > 0 {
			over += bad - ckpt.CountNotFinite(ckpt.F32, vals) // non-finite sources are not overflow
		}
		if _, err := w.Write(enc); err != nil {
			return fmt.Errorf("writing tensor %s: %w", ckpt.Quote(t.Name), err)
		}
		s.prog.Add(int64(len(enc)))
	}
	return s.guard.Overflow(t, it.DType, over, fmt.Sprintf("%s holds at most %.5g", it.DType, ckpt.MaxFinite(it.DType)))
}
