package verify

import (
	"fmt"
	"path"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// The ids of the integrity checks verify adds to the issues Open records
// (ckpt.IndexShardMissing, ckpt.FileSize, ...).
const (
	IndexTotalSize ckpt.FindingID = "index.total_size" // metadata.total_size differs from the payload bytes
	HeaderDType    ckpt.FindingID = "header.dtype"     // a tensor has an unknown dtype
	HeaderLint     ckpt.FindingID = "header.lint"      // strict-format deviations (warn)
)

// indexIDs are the integrity checks the core reader records as Issues, in
// report order, with the message of a passing check.
var indexIDs = []struct {
	id   ckpt.FindingID
	pass string
}{
	{ckpt.IndexShardName, "every shard name in weight_map stays inside the checkpoint directory"},
	{ckpt.IndexShardMissing, "every shard named by weight_map exists"},
	{ckpt.IndexDuplicateKey, "no tensor is listed twice in weight_map"},
	{ckpt.IndexTensorMissing, "every tensor listed in weight_map is in its shard"},
	{ckpt.IndexTensorUnlisted, "every tensor stored in a shard is listed in weight_map"},
	{ckpt.IndexTensorDuplicate, "no tensor is stored in more than one shard"},
}

func integrityChecks(c *ckpt.Checkpoint) []ckpt.Finding {
	var out []ckpt.Finding
	if !c.Sharded {
		for _, x := range indexIDs {
			out = append(out, ckpt.Finding{ID: x.id, Status: ckpt.Skip, Message: "single file: no index"})
		}
		out = append(out, ckpt.Finding{ID: IndexTotalSize, Status: ckpt.Skip, Message: "single file: no index"})
	} else {
		for _, x := range indexIDs {
			found := false
			for _, is := range c.Issues {
				if is.ID != x.id {
					continue
				}
				found = true
				out = append(out, ckpt.Finding{ID: is.ID, Status: ckpt.Fail, Message: issueMessage(is), Tensors: is.Tensors})
			}
			if !found {
				msg := x.pass
				if x.id == ckpt.IndexShardMissing {
					msg = fmt.Sprintf("all %s named by weight_map exist", ckpt.Plural(len(c.Index.Shards()), "shard", "shards"))
				}
				out = append(out, ckpt.Finding{ID: x.id, Status: ckpt.Pass, Message: msg})
			}
		}
		out = append(out, laterIssues(c)...)
		out = append(out, totalSizeCheck(c))
	}
	if !c.Sharded {
		out = append(out, laterIssues(c)...) // a single variant file: index.variant
	}
	out = append(out, fileSizeChecks(c)...)
	return out
}

// laterIssues are the issues of ids added to the core later than
// indexIDs (index.single_file, index.variant), as recorded.
func laterIssues(c *ckpt.Checkpoint) []ckpt.Finding {
	var out []ckpt.Finding
	for _, is := range c.Issues {
		known := is.ID == ckpt.FileSize // reported by fileSizeChecks
		for _, x := range indexIDs {
			known = known || x.id == is.ID
		}
		if !known {
			out = append(out, ckpt.Finding{ID: is.ID, Status: is.Status, Message: issueMessage(is), Tensors: is.Tensors, Files: is.Files})
		}
	}
	return out
}

// issueMessage is the issue's message with every tensor named when there
// are few of them.
func issueMessage(is ckpt.Finding) string {
	msg := is.Message
	if len(is.Tensors) > 1 {
		msg += ": " + ckpt.NameList(is.Tensors, 8)
	}
	return msg
}

func totalSizeCheck(c *ckpt.Checkpoint) ckpt.Finding {
	idx := c.Index
	for _, is := range c.Issues {
		if is.ID == ckpt.IndexShardMissing || is.ID == ckpt.IndexShardName {
			return ckpt.Finding{ID: IndexTotalSize, Status: ckpt.Skip, Message: "not checked: a shard is missing"}
		}
	}
	var payload int64
	seen := map[string]bool{}
	for _, f := range c.Files {
		for _, t := range f.Header.Tensors {
			if seen[t.Name] {
				continue
			}
			seen[t.Name] = true
			payload += int64(t.NBytes())
		}
	}
	if _, present := idx.Metadata["total_size"]; !present {
		return ckpt.Finding{ID: IndexTotalSize, Status: ckpt.Warn,
			Message: fmt.Sprintf("%s has no metadata.total_size (tensor payload is %d bytes)", path.Base(c.Entry), payload)}
	}
	if idx.TotalSize < 0 {
		return ckpt.Finding{ID: IndexTotalSize, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s: metadata.total_size is %v, not an integer (tensor payload is %d bytes)", path.Base(c.Entry), idx.Metadata["total_size"], payload)}
	}
	if idx.TotalSize != payload {
		return ckpt.Finding{ID: IndexTotalSize, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s: metadata.total_size is %d, but the shards hold %d bytes of tensor data (%+d)",
				path.Base(c.Entry), idx.TotalSize, payload, payload-idx.TotalSize)}
	}
	return ckpt.Finding{ID: IndexTotalSize, Status: ckpt.Pass, Message: fmt.Sprintf("metadata.total_size equals the tensor payload (%d bytes)", payload)}
}

// fileSizeChecks reports the file.size findings that a lenient open
// recorded (a file whose size differs from 8 + header + data).
func fileSizeChecks(c *ckpt.Checkpoint) []ckpt.Finding {
	var out []ckpt.Finding
	for _, is := range c.Issues {
		if is.ID == ckpt.FileSize {
			out = append(out, ckpt.Finding{ID: is.ID, Status: is.Status, Tensors: is.Tensors, Message: is.Message})
		}
	}
	if len(out) == 0 {
		out = append(out, ckpt.Finding{ID: ckpt.FileSize, Status: ckpt.Pass,
			Message: fmt.Sprintf("every file's size matches its header (%s, 8 + header + data)", ckpt.Plural(len(c.Files), "file", "files"))})
	}
	return out
}

// headerChecks reports the strict-format lints (warnings) and unknown dtypes.
func headerChecks(c *ckpt.Checkpoint) []ckpt.Finding {
	var out []ckpt.Finding
	var unknown []string
	for _, f := range c.Files {
		for _, l := range f.Header.Lints {
			out = append(out, ckpt.Finding{ID: HeaderLint, Status: ckpt.Warn, Message: fmt.Sprintf("%s: %s (%s)", f.Name, l.Message, l.ID), Files: []string{f.Name}})
		}
		for _, t := range f.Header.Tensors {
			if !t.DType.Known() {
				unknown = append(unknown, t.Name)
				out = append(out, ckpt.Finding{ID: HeaderDType, Status: ckpt.Fail, Tensors: []string{t.Name},
					Message: fmt.Sprintf("%s: tensor %s has dtype %s, which is not a safetensors dtype", f.Name, ckpt.EscapeName(t.Name), ckpt.Quote(string(t.DType)))})
			}
		}
	}
	if len(unknown) == 0 {
		out = append([]ckpt.Finding{{ID: HeaderDType, Status: ckpt.Pass, Message: "every tensor has a known safetensors dtype"}}, out...)
	}
	lints := 0
	for _, ch := range out {
		if ch.ID == HeaderLint {
			lints++
		}
	}
	if lints == 0 {
		out = append(out, ckpt.Finding{ID: HeaderLint, Status: ckpt.Pass,
			Message: fmt.Sprintf("every header of %s follows the strict format (starts with '{', space padding, writer order)",
				ckpt.Plural(len(c.Files), "file", "files"))})
	}
	return out
}
