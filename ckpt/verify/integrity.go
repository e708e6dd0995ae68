package verify

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// indexIDs are the integrity checks the core reader records as Issues, in
// report order, with the message of a passing check.
var indexIDs = []struct{ id, pass string }{
	{"index.shard_name", "every shard name in weight_map stays inside the checkpoint directory"},
	{"index.shard_missing", "every shard named by weight_map exists"},
	{"index.duplicate_key", "no tensor is listed twice in weight_map"},
	{"index.tensor_missing", "every tensor listed in weight_map is in its shard"},
	{"index.tensor_unlisted", "every tensor stored in a shard is listed in weight_map"},
	{"index.tensor_duplicate", "no tensor is stored in more than one shard"},
}

func integrityChecks(c *ckpt.Checkpoint) []Check {
	var out []Check
	if !c.Sharded {
		for _, x := range indexIDs {
			out = append(out, Check{ID: x.id, Status: Skip, Message: "single file: no index"})
		}
		out = append(out, Check{ID: "index.total_size", Status: Skip, Message: "single file: no index"})
	} else {
		for _, x := range indexIDs {
			found := false
			for _, is := range c.Issues {
				if is.ID != x.id {
					continue
				}
				found = true
				out = append(out, Check{ID: is.ID, Status: Fail, Message: issueMessage(is), Tensors: is.Tensors})
			}
			if !found {
				msg := x.pass
				if x.id == "index.shard_missing" {
					msg = fmt.Sprintf("all %s named by weight_map exist", plural(len(c.Index.Shards()), "shard", "shards"))
				}
				out = append(out, Check{ID: x.id, Status: Pass, Message: msg})
			}
		}
		for _, is := range c.Issues { // ids added to the core later
			known := is.ID == "file.size" // reported by fileSizeChecks
			for _, x := range indexIDs {
				known = known || x.id == is.ID
			}
			if !known {
				out = append(out, Check{ID: is.ID, Status: is.Status, Message: issueMessage(is), Tensors: is.Tensors, Files: is.Files})
			}
		}
		out = append(out, totalSizeCheck(c))
	}
	out = append(out, fileSizeChecks(c)...)
	return out
}

// issueMessage is the issue's message with every tensor named when there
// are few of them.
func issueMessage(is ckpt.Finding) string {
	msg := is.Message
	if len(is.Tensors) > 1 {
		msg += ": " + names(is.Tensors, 8)
	}
	return msg
}

func totalSizeCheck(c *ckpt.Checkpoint) Check {
	idx := c.Index
	for _, is := range c.Issues {
		if is.ID == "index.shard_missing" || is.ID == "index.shard_name" {
			return Check{ID: "index.total_size", Status: Skip, Message: "not checked: a shard is missing"}
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
		return Check{ID: "index.total_size", Status: Warn, Message: fmt.Sprintf("%s has no metadata.total_size (tensor payload is %d bytes)", ckpt.IndexFile, payload)}
	}
	if idx.TotalSize < 0 {
		return Check{ID: "index.total_size", Status: Fail, Message: fmt.Sprintf("%s: metadata.total_size is %v, not an integer (tensor payload is %d bytes)", ckpt.IndexFile, idx.Metadata["total_size"], payload)}
	}
	if idx.TotalSize != payload {
		return Check{ID: "index.total_size", Status: Fail, Message: fmt.Sprintf("%s: metadata.total_size is %d, but the shards hold %d bytes of tensor data (%+d)", ckpt.IndexFile, idx.TotalSize, payload, payload-idx.TotalSize)}
	}
	return Check{ID: "index.total_size", Status: Pass, Message: fmt.Sprintf("metadata.total_size equals the tensor payload (%d bytes)", payload)}
}

// fileSizeChecks reports the file.size findings that a lenient open
// recorded (a file whose size differs from 8 + header + data).
func fileSizeChecks(c *ckpt.Checkpoint) []Check {
	var out []Check
	for _, is := range c.Issues {
		if is.ID == "file.size" {
			out = append(out, Check{ID: is.ID, Status: is.Status, Tensors: is.Tensors, Message: is.Message})
		}
	}
	if len(out) == 0 {
		out = append(out, Check{ID: "file.size", Status: Pass, Message: fmt.Sprintf("every file's size matches its header (%s, 8 + header + data)", plural(len(c.Files), "file", "files"))})
	}
	return out
}

// headerChecks reports the strict-format lints (warnings) and unknown dtypes.
func headerChecks(c *ckpt.Checkpoint) []Check {
	var out []Check
	var unknown []string
	for _, f := range c.Files {
		for _, l := range f.Header.Lints {
			out = append(out, Check{ID: "header.lint", Status: Warn, Message: fmt.Sprintf("%s: %s (%s)", f.Name, l.Message, l.ID)})
		}
		for _, t := range f.Header.Tensors {
			if !t.DType.Known() {
				unknown = append(unknown, t.Name)
				out = append(out, Check{ID: "header.dtype", Status: Fail, Tensors: []string{t.Name},
					Message: fmt.Sprintf("%s: tensor %s has dtype %s, which is not a safetensors dtype", f.Name, ckpt.EscapeName(t.Name), ckpt.Quote(string(t.DType)))})
			}
		}
	}
	if len(unknown) == 0 {
		out = append([]Check{{ID: "header.dtype", Status: Pass, Message: "every tensor has a known safetensors dtype"}}, out...)
	}
	lints := 0
	for _, ch := range out {
		if ch.ID == "header.lint" {
			lints++
		}
	}
	if lints == 0 {
		out = append(out, Check{ID: "header.lint", Status: Pass, Message: fmt.Sprintf("every header of %s follows the strict format (starts with '{', space padding, writer order)", plural(len(c.Files), "file", "files"))})
	}
	return out
}
