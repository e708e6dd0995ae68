package source

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// defaultEndpoint is the Hugging Face hub.
const defaultEndpoint = "https://huggingface.co"

// Openers returns the openers for every non-local source form: hf: (the
// local cache), hf:// (the hub), http(s):// URLs, and local paths inside
// a cache snapshot; last, a local path that does not exist and is written
// like a repository id (ORG/NAME) gets a hint at hf: and hf://
// (bareRepoOpener). They share one HTTP
// client, so connections are reused across the sources of a command.
func Openers(opt Options) []ckpt.SourceOpener {
	opt = opt.withDefaults()
	return []ckpt.SourceOpener{cacheOpener(opt.Getenv), hubOpener(opt), urlOpener(opt), snapshotPathOpener(), bareRepoOpener(opt.Getenv)}
}

// cacheOpener opens hf:ORG/NAME[@REV][/FILE] from the local Hugging Face
// cache; REV may be a branch, a tag, a commit or a unique commit prefix.
func cacheOpener(getenv func(string) string) ckpt.SourceOpener {
	return func(ctx context.Context, src string) (ckpt.Store, string, bool, error) {
		rest, ok := strings.CutPrefix(src, "hf:")
		if !ok || strings.HasPrefix(rest, "//") {
			return nil, "", false, nil
		}
		repo, entry, err := parseRepoPath(rest)
		if err != nil {
			return nil, "", true, fmt.Errorf("source %s: %w", ckpt.Quote(ckpt.Redact(src)), err)
		}
		root, err := hfCacheRoot(getenv)
		if err != nil {
			return nil, "", true, fmt.Errorf("source %s: %w", ckpt.Quote(ckpt.Redact(src)), err)
		}
		s, err := openCache(root, repo)
		if err != nil {
			return nil, "", true, err
		}
		return s, entry, true, nil
	}
}

// hubEndpoint is $HF_ENDPOINT without a trailing slash, or defaultEndpoint.
func hubEndpoint(getenv func(string) string) string {
	if getenv != nil {
		if e := strings.TrimRight(getenv("HF_ENDPOINT"), "/"); e != "" {
			return e
		}
	}
	return defaultEndpoint
}

// hubURL is the resolve URL of a repository revision's root:
// ENDPOINT/ORG/NAME/resolve/REV/.
func hubURL(endpoint string, repo Repo) string {
	return strings.TrimRight(endpoint, "/") + "/" + repo.ID + "/resolve/" + url.PathEscape(repo.rev()) + "/"
}

// hubOpener opens hf://ORG/NAME[@REV][/FILE] from the hub at $HF_ENDPOINT,
// with the hub token (HubToken) as bearer token when there is one. Under
// HF_HUB_OFFLINE it fails at once with *OfflineError.
func hubOpener(opt Options) ckpt.SourceOpener {
	opt = opt.withDefaults()
	return func(ctx context.Context, src string) (ckpt.Store, string, bool, error) {
		rest, ok := strings.CutPrefix(src, "hf://")
		if !ok {
			return nil, "", false, nil
		}
		repo, entry, err := parseRepoPath(rest)
		if err != nil {
			return nil, "", true, fmt.Errorf("source %s: %w", ckpt.Quote(ckpt.Redact(src)), err)
		}
		if isOffline(opt.Getenv) {
			return nil, "", true, &OfflineError{Source: ckpt.Redact(src), Repo: &repo}
		}
		token, from := hubTokenFrom(opt.Getenv)
		s, err := newHTTPStore(ctx, hubURL(hubEndpoint(opt.Getenv), repo), token, from, opt)
		if err != nil {
			return nil, "", true, fmt.Errorf("source %s: %w", ckpt.Quote(ckpt.Redact(src)), err)
		}
		s.hub = true
		return s, entry, true, nil
	}
}

// urlOpener opens http:// and https:// URLs of a .safetensors file or an
// index (.json); a URL ending in "/" is a directory (index, else
// model.safetensors). The hub token is sent only to the origin (scheme,
// host and port) of $HF_ENDPOINT.
func urlOpener(opt Options) ckpt.SourceOpener {
	opt = opt.withDefaults()
	return func(ctx context.Context, src string) (ckpt.Store, string, bool, error) {
		if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") {
			return nil, "", false, nil
		}
		if isOffline(opt.Getenv) {
			return nil, "", true, &OfflineError{Source: ckpt.Redact(src)}
		}
		u, err := url.Parse(src)
		if err != nil || u.Host == "" {
			return nil, "", true, fmt.Errorf("source %s: not a valid URL", ckpt.Quote(ckpt.Redact(src)))
		}
		dir, entry := path.Split(u.Path)
		if entry != "" && !strings.HasSuffix(entry, ".safetensors") && !strings.HasSuffix(entry, ".json") {
			return nil, "", true, fmt.Errorf("source %s: a URL must name a .safetensors file, an index .json or a directory ending in /", ckpt.Quote(ckpt.Redact(src)))
		}
		base := *u
		base.Path, base.RawPath = dir, ""
		token, from, hub := "", "", false
		if ep, err := url.Parse(hubEndpoint(opt.Getenv)); err == nil && sameOrigin(ep, u) {
			token, from = hubTokenFrom(opt.Getenv)
			hub = true
		}
		s, err := newHTTPStore(ctx, base.String(), token, from, opt)
		if err != nil {
			return nil, "", true, fmt.Errorf("source %s: %w", ckpt.Quote(ckpt.Redact(src)), err)
		}
		s.hub = hub
		return s, entry, true, nil
	}
}
