// Package source resolves checkpoint sources that are not local paths into
// ckpt.Stores, and provides the ckpt.SourceOpeners the CLI registers:
//
//   - hf:ORG/NAME[@REV] — a snapshot in the local Hugging Face cache
//     ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub).
//     REV is a branch or tag under refs/, or a 40-hex commit (default main).
//     The store is confined to the repository folder models--ORG--NAME:
//     snapshot links may point into its blobs/ but nowhere else. It reports
//     partial downloads (ckpt.PartialStore) and the SHA-256 that each LFS
//     blob is named by (ckpt.DigestStore).
//   - hf://ORG/NAME[@REV] — the same repository on the hub, read with HTTP
//     Range requests from $HF_ENDPOINT/ORG/NAME/resolve/REV/FILE (default
//     endpoint https://huggingface.co; "Authorization: Bearer $HF_TOKEN" when
//     set, sent only to the endpoint's origin: scheme, host and port, and
//     never after a redirect to another origin).
//   - https://…/FILE.safetensors or https://…/model.safetensors.index.json
//     (http:// too) — plain HTTP with Range.
//
// HTTP blobs are io.ReaderAts over Range requests. Opening a file makes one
// speculative request for its first bytes (64 KiB by default), which also
// gives the size (Content-Range) and the ETag; a safetensors header that is
// larger takes one more request. Every later request is pinned to the ETag
// seen first (If-Match, and the ETag of each response is checked), so a
// file that changes while it is read is an error, never a mix of versions.
// Requests are retried with exponential backoff on connection errors, 5xx
// and 429 (honouring Retry-After); each request has an idle timeout and each
// operation a total time bound, so a hanging server cannot hang a command.
// Servers that ignore Range are handled by reading only the needed prefix of
// the response.
//
// The package never prints.
package source
