package extract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// outputMode is the permission of written files (temporary files are
// created 0600).
const outputMode = 0o644

// ErrNeedsDirectory is returned by Write when the output is sharded but the
// target names a .safetensors file.
var ErrNeedsDirectory = errors.New("sharded output needs a directory")

// OutOption names the output in the refusals of it (*atomicfile.RefusedError's
// Flag, through ckpt.CheckOutput's *ckpt.RefusedOutputError): the Options
// field; the CLI says its flag.
const OutOption = "Out"

// OutputFile is one file Write produced.
type OutputFile struct {
	Path    string `json:"path"` // as written (the target path joined with the file name)
	Size    int64  `json:"size"` // file size
	Tensors int    `json:"tensors"`
	Bytes   int64  `json:"bytes"` // payload bytes
}

// Written describes what Write produced.
type Written struct {
	Out   string       // the target path
	Dir   bool         // Out is a directory
	Files []OutputFile // the safetensors files, in shard order
	Index string       // path of model.safetensors.index.json, or ""
	// Config is the path of the config.json copy, or "".
	Config string
}

// isDirTarget reports whether out is written as a directory: it exists as a
// directory, or it does not end in ".safetensors".
func isDirTarget(out string) bool {
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return true
	}
	return !strings.HasSuffix(out, ".safetensors")
}

// Write writes the plan to out. A target ending in .safetensors (that is
// not an existing directory) receives a single file, replaced atomically;
// a sharded plan then fails with ErrNeedsDirectory. Any other target is a
// directory, which must not exist or be empty: it receives
// model.safetensors (or the shards and model.safetensors.index.json) and,
// when the source has one, config.json — without quantization_config if
// DropQuantization is set. The directory is assembled under a temporary
// name beside it and renamed into place, so that an error or a cancelled
// ctx leaves no output behind.
func (p *Plan) Write(ctx context.Context, out string) (*Written, error) {
	p.progress.AddTotal(p.TotalBytes)
	if !isDirTarget(out) {
		if p.Sharded {
			return nil, fmt.Errorf("%w: the output is %d shards of at most the max shard size but the output %s names a .safetensors file",
				ErrNeedsDirectory, len(p.Shards), out)
		}
		// The output policy (atomicfile.Place): a regular file replaced
		// atomically, a link's target, never a device or FIFO (the
		// shards are written at offsets).
		af, err := atomicfile.Open(out, atomicfile.Policy{Flag: OutOption, Seek: true})
		if err != nil {
			return nil, err
		}
		f, err := p.writeOut(ctx, 0, af)
		if err != nil {
			return nil, err
		}
		f.Path = out
		return &Written{Out: out, Files: []OutputFile{f}}, nil
	}
	return p.writeDir(ctx, out)
}

// writeFile writes shard i to path (in a folder being assembled)
// atomically.
func (p *Plan) writeFile(ctx context.Context, i int, path string) (OutputFile, error) {
	af, err := atomicfile.Create(path)
	if err != nil {
		return OutputFile{}, err
	}
	return p.writeOut(ctx, i, af)
}

// writeOut writes shard i into af and commits it (aborts it on error).
func (p *Plan) writeOut(ctx context.Context, i int, af *atomicfile.File) (OutputFile, error) {
	path := af.Target()
	defer af.Abort()
	if err := af.Chmod(outputMode); err != nil {
		return OutputFile{}, fmt.Errorf("writing %s: %w", path, err)
	}
	// Converted and written by the plan's workers, each piece at its
	// offset (pwrite), with no copy between the conversion and the write.
	size, err := p.writeShardAt(ctx, i, af)
	if err != nil {
		return OutputFile{}, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := ctx.Err(); err != nil {
		return OutputFile{}, err
	}
	if err := af.Commit(); err != nil {
		return OutputFile{}, err
	}
	return OutputFile{Path: path, Size: size, Tensors: len(p.Shards[i].Items), Bytes: p.Shards[i].Bytes}, nil
}

func (p *Plan) writeDir(ctx context.Context, out string) (res *Written, err error) {
	// The output policy (atomicfile.Place): a new name or an empty
	// directory (through links), nothing else.
	tgt, err := atomicfile.Place(out, atomicfile.Policy{Flag: OutOption, Dir: true, Empty: true})
	if err != nil {
		return nil, err
	}
	existing := tgt.Kind == atomicfile.KindDir
	out = tgt.Path
	// A new directory is assembled beside out and renamed into place. An
	// existing (empty) one may be a mount point or sit in a read-only
	// parent: the files are assembled in a hidden folder inside it and
	// moved up one by one, shards first and the index last, so that no
	// index ever names a shard that is not there yet.
	parent := filepath.Dir(filepath.Clean(out))
	where, op := parent, "creating output directory beside"
	if existing {
		where, op = out, "creating a temporary folder in"
	}
	tmp, err := os.MkdirTemp(where, "."+filepath.Base(filepath.Clean(out))+".tmp-*")
	if err != nil {
		return nil, &atomicfile.WriteError{Op: op, Path: out, Err: err}
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
			// a message names the output, not the folder it is assembled in
			err = atomicfile.NameTarget(err, tmp, out)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp makes it 0700
		return nil, &atomicfile.WriteError{Op: op, Path: out, Err: err}
	}
	res = &Written{Out: out, Dir: true}
	var names []string // in the order they must appear in out
	for i, sh := range p.Shards {
		name := sh.Name
		if name == "" {
			name = "model.safetensors"
		}
		f, err := p.writeFile(ctx, i, filepath.Join(tmp, name))
		if err != nil {
			return nil, err
		}
		f.Path = filepath.Join(out, name)
		res.Files = append(res.Files, f)
		names = append(names, name)
	}
	if p.Config != nil {
		data, err := p.configJSON()
		if err != nil {
			return nil, err
		}
		if err := writeSmall(filepath.Join(tmp, "config.json"), data); err != nil {
			return nil, err
		}
		res.Config = filepath.Join(out, "config.json")
		names = append(names, "config.json")
	}
	if p.Sharded {
		if err := writeSmall(filepath.Join(tmp, ckpt.IndexFile), p.indexJSON()); err != nil {
			return nil, err
		}
		res.Index = filepath.Join(out, ckpt.IndexFile)
		names = append(names, ckpt.IndexFile)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return nil, err
	}
	if existing {
		return res, moveInto(tmp, out, names)
	}
	if err := os.Rename(tmp, out); err != nil {
		return nil, &atomicfile.WriteError{Op: "renaming output into", Path: out, Err: err}
	}
	return res, atomicfile.SyncDir(parent)
}

// moveInto moves names, in order, from the folder tmp inside out up into
// out, then removes tmp. On failure it removes what it moved, so that out
// is left empty as it was found.
func moveInto(tmp, out string, names []string) error {
	var moved []string
	for _, n := range names {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(out, n)); err != nil {
			for _, m := range moved {
				os.Remove(filepath.Join(out, m))
			}
			os.RemoveAll(tmp)
			return &atomicfile.WriteError{Op: "moving output into", Path: out, Err: err}
		}
		moved = append(moved, n)
	}
	if err := os.Remove(tmp); err != nil {
		return &atomicfile.WriteError{Op: "removing temporary folder of", Path: out, Err: err}
	}
	return atomicfile.SyncDir(out)
}

func writeSmall(path string, data []byte) error {
	af, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer af.Abort()
	if err := af.Chmod(outputMode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := af.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return af.Commit()
}

// indexJSON is model.safetensors.index.json for a sharded plan:
// metadata.total_size is the payload in bytes, weight_map lists tensors in
// natural order.
func (p *Plan) indexJSON() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"metadata\": {\n    \"total_size\": %d\n  },\n  \"weight_map\": {", p.TotalBytes)
	for i, it := range p.Items {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(it.Name)
		v, _ := json.Marshal(p.Shards[it.Shard].Name)
		fmt.Fprintf(&b, "\n    %s: %s", k, v)
	}
	b.WriteString("\n  }\n}\n")
	return b.Bytes()
}

// configJSON is the config.json written beside a directory output: the
// source config (re-encoded with sorted keys, numbers as written), without
// its quantization_config when DropQuantization is set, with the
// selection under ckpt.SubsetKey when Subset is set.
func (p *Plan) configJSON() ([]byte, error) {
	if p.Config == nil {
		return nil, errors.New("the source has no config.json")
	}
	q := p.Config.Quantization()
	raw := p.Config.Raw
	if p.DropQuantization && q != nil {
		raw = dropKey(raw, strings.Split(q.Path, "."))
	}
	if p.Subset != nil {
		cp := make(map[string]any, len(raw)+1)
		for k, v := range raw {
			cp[k] = v
		}
		cp[ckpt.SubsetKey] = map[string]any{"match": p.Subset.Match, "exclude": p.Subset.Exclude}
		raw = cp
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(raw); err != nil {
		return nil, fmt.Errorf("encoding config of %s: %w", p.Config.File, err)
	}
	return b.Bytes(), nil
}

// dropKey returns a copy of m without the key at path (copying only the
// maps along the path).
func dropKey(m map[string]any, path []string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	if len(path) == 1 {
		delete(out, path[0])
		return out
	}
	if sub, ok := m[path[0]].(map[string]any); ok {
		out[path[0]] = dropKey(sub, path[1:])
	}
	return out
}
