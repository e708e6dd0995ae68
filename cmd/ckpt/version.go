package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
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
	Go         string `json:"go"`
	Platform   string `json:"platform"`
	Formats    struct {
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

// buildVersionInfo gathers the version document; bi is the binary's build
// information (nil when unavailable).
func buildVersionInfo(bi *debug.BuildInfo) (VersionInfo, error) {
	v := VersionInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Profiles: []ProfilePins{}}
	if bi != nil {
		if bi.GoVersion != "" {
			v.Go = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	v.Formats.JSONSchema = ckpt.SchemaVersion
	v.Formats.Contract = verify.ContractVersion
	v.Formats.Manifest = cache.ManifestFormat
	v.Formats.Tensorbin = tensorbin.Schema
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
	cmd.Flags().StringVar(&o.Format, "format", "auto", "output format: text, json (auto: text)")
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

func printVersion(w io.Writer, v *VersionInfo) error {
	commit := v.Commit
	switch {
	case commit == "":
		commit = "unknown (no VCS stamp: go build -buildvcs=true in a git clone stamps it; git worktrees and -buildvcs=false do not)"
	case v.Modified:
		commit += " (modified)"
	}
	if v.CommitTime != "" {
		commit += " " + v.CommitTime
	}
	fmt.Fprintf(w, "ckpt %s\ncommit: %s\ngo: %s %s\n", v.Version, commit, v.Go, v.Platform)
	fmt.Fprintf(w, "formats: JSON schema_version %d, contract_version %d, cache manifest %s\n", v.Formats.JSONSchema, v.Formats.Contract, v.Formats.Manifest)
	fmt.Fprintf(w, "tensorbin: %s\n", v.Formats.Tensorbin)
	for _, p := range v.Profiles {
		fmt.Fprintf(w, "profile %s:\n", p.Name)
		printPins(w, "  ", p.Pinned)
	}
	return nil
}
