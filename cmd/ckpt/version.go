package main

import (
	"fmt"
	"io"
	"regexp"
	"runtime"
	"runtime/debug"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
)

// VersionInfo is the JSON document of ckpt version: the build of this
// binary and the versions of the formats it reads and writes.
type VersionInfo struct {
	Schema  ckpt.Schema `json:"schema_version"`
	Version string      `json:"version"`
	// Commit, CommitTime and Modified come from the Go toolchain's VCS
	// stamp (runtime/debug.ReadBuildInfo); empty when the binary was built
	// without one (go test, -buildvcs=false, outside a repository).
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified"`
	// CommitFrom says where Commit came from: "vcs" (the toolchain's
	// stamp), "module_version" (the 12-digit commit prefix of a
	// pseudo-version, as `go install …@latest` of an untagged commit
	// records), "ldflags" (-X main.stampedCommit=…); "" when unknown.
	CommitFrom string `json:"commit_from,omitempty"`
	// Module and ModuleVersion are the main module of the build and its
	// version: v1.2.3 or a pseudo-version for `go install …@VERSION`,
	// "(devel)" for a build from a source tree.
	Module        string `json:"module,omitempty"`
	ModuleVersion string `json:"module_version"`
	Go            string `json:"go"`
	Platform      string `json:"platform"`
	Formats       struct {
		// JSONSchema is the schema_version of every JSON document.
		JSONSchema int `json:"json_schema"`
		// Contract is the contract_version of ckpt contract files.
		Contract int `json:"contract"`
		// Manifest is the format of cache manifest.json files.
		Manifest string `json:"manifest"`
		// Tensorbin is the upstream schema .tensorbin files follow.
		Tensorbin string `json:"tensorbin"`
	} `json:"formats"`
	// Profiles lists the built-in mapping profiles with the upstream
	// revision each transcribes.
	Profiles []ProfilePins `json:"profiles"`
}

// ProfilePins is a built-in mapping profile and its upstream pins.
type ProfilePins struct {
	Name   string          `json:"name"`
	Pinned *mapping.Pinned `json:"pinned"`
}

// stampedCommit is the commit stamped at link time, for builds without
// VCS information: go build -ldflags "-X main.stampedCommit=$(git rev-parse HEAD)".
var stampedCommit string

// pseudoVersionRE matches a Go module pseudo-version and captures its
// 12-digit commit prefix (https://go.dev/ref/mod#pseudo-versions).
var pseudoVersionRE = regexp.MustCompile(`[-.](?:0\.)?[0-9]{14}-([0-9a-f]{12})(?:\+incompatible)?$`)

// buildVersionInfo gathers the version document; bi is the binary's build
// information (nil when unavailable).
func buildVersionInfo(bi *debug.BuildInfo) (VersionInfo, error) {
	v := VersionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Profiles: []ProfilePins{}}
	if bi != nil {
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		v.Module, v.ModuleVersion = bi.Main.Path, bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit, v.CommitFrom = s.Value, "vcs"
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Commit == "" {
		if m := pseudoVersionRE.FindStringSubmatch(v.ModuleVersion); m != nil {
			v.Commit, v.CommitFrom = m[1], "module_version"
		} else if stampedCommit != "" {
			v.Commit, v.CommitFrom = stampedCommit, "ldflags"
		}
	}
	v.Formats.JSONSchema = ckpt.SchemaVersion
	v.Formats.Contract = contract.Version
	v.Formats.Manifest = cache.ManifestFormat
	v.Formats.Tensorbin = tensorbin.SchemaVersion
	for _, name := range mapping.BuiltinNames() {
		p, err := mapping.Builtin(name)
		if err != nil {
			return v, err
		}
		v.Profiles = append(v.Profiles, ProfilePins{Name: name, Pinned: p.Pinned})
	}
	return v, nil
}

type versionOptions struct{ Format string }

func (a *App) newVersionCmd() *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the tool version, the git commit it was built from, the Go version, the mapping profiles' upstream pins and the format versions",
		Example: `  ckpt version
  ckpt version --format json | jq -r .commit`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runVersion(o)
		},
	}
	enumFlag(cmd.Flags(), &o.Format, "format", output.Auto, formatEnum(output.Text, output.JSON), "output format: {} (auto: text)")
	return cmd
}

func (a *App) runVersion(o *versionOptions) error {
	format, err := output.Resolve(o.Format, false, output.Text, output.JSON)
	if err != nil {
		return usageError("%v", err)
	}
	bi, _ := debug.ReadBuildInfo()
	v, err := buildVersionInfo(bi)
	if err != nil {
		return err
	}
	if format == output.JSON {
		return output.WriteJSON(a.Out, v)
	}
	return printVersion(a.Out, &v)
}

func orUnknown(s string) string {
	if s == "" {
		return "github.com/ckpt-dev/ckpt"
	}
	return s
}

func printVersion(w io.Writer, v *VersionInfo) error {
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown (not stamped: go build or go install ./cmd/ckpt in a git clone stamps it; " +
			"-buildvcs=false (also in GOFLAGS), git worktrees and copies without .git do not. " +
			"Stamp it with: go build -ldflags \"-X main.stampedCommit=$(git rev-parse HEAD)\" ./cmd/ckpt)"
	case v.Modified:
		commit += " (modified)"
	}
	switch v.CommitFrom {
	case "module_version":
		commit += " (from the module version)"
	case "ldflags":
		commit += " (stamped with -ldflags)"
	}
	if v.CommitTime != "" {
		commit += " " + v.CommitTime
	}
	fmt.Fprintf(w, "ckpt %s\ncommit: %s\n", v.Version, commit)
	switch mv := v.ModuleVersion; {
	case mv == "" || mv == "(devel)":
		fmt.Fprintf(w, "module: %s (devel): built from a source tree, not a released version\n", orUnknown(v.Module))
	default:
		fmt.Fprintf(w, "module: %s %s\n", orUnknown(v.Module), mv)
	}
	fmt.Fprintf(w, "go: %s %s\n", v.Go, v.Platform)
	fmt.Fprintf(w, "formats: JSON schema_version %d, contract_version %d, cache manifest %s\n", v.Formats.JSONSchema, v.Formats.Contract, v.Formats.Manifest)
	fmt.Fprintf(w, "tensorbin: %s\n", v.Formats.Tensorbin)
	for _, p := range v.Profiles {
		fmt.Fprintf(w, "profile %s:\n", p.Name)
		printPins(w, "  ", p.Pinned)
	}
	return nil
}
