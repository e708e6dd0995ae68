package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"golang.org/x/sync/errgroup"
)

// The ids of the checks of a Hugging Face cache snapshot.
const (
	CachePartial ckpt.FindingID = "cache.partial" // a partial download in the snapshot (ckpt.PartialStore)
	CacheSHA256  ckpt.FindingID = "cache.sha256"  // a file whose SHA-256 differs from the recorded one (ckpt.DigestStore)
)

// cacheChecks checks a Hugging Face cache snapshot: partial downloads and,
// with ReadData, every file's SHA-256 against its blob name. Digests
// computed while the data was streamed (file name → hex) are used as they
// are; other files (config, index, shards whose stream failed) are read.
func cacheChecks(ctx context.Context, c *ckpt.Checkpoint, opt CheckOptions, streamed map[string]string) ([]ckpt.Finding, error) {
	inner := ckpt.UnwrapStore(c.Store)
	var out []ckpt.Finding
	if ps, ok := inner.(ckpt.PartialStore); ok {
		partial, err := ps.Partial(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out = append(out, ckpt.Finding{ID: CachePartial, Status: ckpt.Fail, Message: fmt.Sprintf("cannot tell partial downloads: %v", err)})
		case len(partial) == 0:
			out = append(out, ckpt.Finding{ID: CachePartial, Status: ckpt.Pass, Message: "no partial downloads in the cache snapshot"})
		default:
			// An unfinished download that no file of the snapshot links to
			// (blobs/<etag>.incomplete; blobs/ is shared by every revision)
			// can be one of this checkpoint's only while a file it needs is
			// missing; otherwise it is another revision's, or a file the
			// checkpoint does not read: worth a warning, not a failure.
			complete := !slices.ContainsFunc(c.Issues, func(is ckpt.Finding) bool { return is.ID == ckpt.IndexShardMissing })
			for _, p := range partial {
				if strings.HasPrefix(p, "blobs/") && complete {
					out = append(out, ckpt.Finding{ID: CachePartial, Status: ckpt.Warn,
						Message: fmt.Sprintf("%s is an unfinished download in this repository's cache that no file of the snapshot links to; every file of the checkpoint "+
							"is present, so it belongs to another revision or to a file the checkpoint does not read", ckpt.EscapeName(p))})
					continue
				}
				out = append(out, ckpt.Finding{ID: CachePartial, Status: ckpt.Fail,
					Message: fmt.Sprintf("%s is a partial download (incomplete blob or snapshot link to a missing blob): download it again", ckpt.EscapeName(p))})
			}
		}
	} else {
		out = append(out, ckpt.Finding{ID: CachePartial, Status: ckpt.Skip, Message: "not a Hugging Face cache snapshot"})
	}
	ds, ok := inner.(ckpt.DigestStore)
	switch {
	case !ok:
		out = append(out, ckpt.Finding{ID: CacheSHA256, Status: ckpt.Skip, Message: "the source does not record file digests"})
		return out, nil
	case !opt.ReadData:
		out = append(out, ckpt.Finding{ID: CacheSHA256, Status: ckpt.Skip, Message: "not checked: file digests are checked only with " + opt.Words.Of("ReadData")})
		return out, nil
	}
	type job struct {
		name, want, got string
		err             error
	}
	var jobs []*job
	cand := []string{"config.json"}
	if c.Index != nil {
		cand = append(cand, c.Entry)
	}
	for _, f := range c.Files {
		cand = append(cand, f.Name)
	}
	for _, n := range cand {
		if want, ok := ds.ExpectedSHA256(n); ok {
			jobs = append(jobs, &job{name: n, want: strings.ToLower(want)})
		}
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, j := range jobs {
		if got, ok := streamed[j.name]; ok {
			j.got = got
			continue
		}
		g.Go(func() error {
			j.got, j.err = fileSHA256(gctx, inner, j.name, opt.Progress)
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	bad := 0
	for _, j := range jobs {
		switch {
		case j.err != nil:
			bad++
			out = append(out, ckpt.Finding{ID: CacheSHA256, Status: ckpt.Fail, Message: fmt.Sprintf("%s: cannot hash: %v", ckpt.EscapeName(j.name), j.err)})
		case j.got != j.want:
			bad++
			out = append(out, ckpt.Finding{ID: CacheSHA256, Status: ckpt.Fail,
				Message: fmt.Sprintf("%s: SHA-256 is %s, expected %s (the blob's name): the file is corrupt or was modified", ckpt.EscapeName(j.name), j.got, j.want)})
		}
	}
	if bad == 0 {
		if len(jobs) == 0 {
			out = append(out, ckpt.Finding{ID: CacheSHA256, Status: ckpt.Skip, Message: "no file has a recorded SHA-256"})
		} else {
			out = append(out, ckpt.Finding{ID: CacheSHA256, Status: ckpt.Pass,
				Message: fmt.Sprintf("%s match their recorded SHA-256", ckpt.Plural(len(jobs), "file", "files"))})
		}
	}
	return out, nil
}

func fileSHA256(ctx context.Context, s ckpt.Store, name string, p *ckpt.Progress) (string, error) {
	b, err := s.Open(ctx, name)
	if err != nil {
		return "", err
	}
	defer b.Close()
	p.AddTotal(b.Size())
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var off int64
	for off < b.Size() {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n := min(int64(len(buf)), b.Size()-off)
		m, err := b.ReadAt(buf[:n], off)
		if err != nil && !(err == io.EOF && int64(m) == n) {
			return "", fmt.Errorf("reading %s at byte %d: %w", s.Location(name), off, err)
		}
		h.Write(buf[:n])
		off += n
		p.Add(n)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
