package verify_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunRefusesOptions: the options no command line gives are refused
// before any work, as a *ckpt.OptionError naming the field.
func TestRunRefusesOptions(t *testing.T) {
	t.Parallel()
	sel := func(match ...string) *ckpt.Matcher {
		var gs []ckpt.Glob
		for _, m := range match {
			g, err := ckpt.ParseGlob(m)
			require.NoError(t, err)
			gs = append(gs, g)
		}
		return ckpt.MatcherOf(gs, nil)
	}
	lint, err := verify.ParseAllowance("header.lint:*.safetensors")
	require.NoError(t, err)
	tests := []struct {
		name string
		req  verify.Options
		msg  string
	}{
		{"arch", verify.Options{Source: "x", Arch: "llama"}, `Options.Arch is "llama" (want ArchAuto, ArchQwen35 or ArchNone)`},
		{"select alone", verify.Options{Source: "x", Select: sel("a")}, "Options.Select selects the tensors compared with a contract: it needs Against"},
		{"allow-config alone", verify.Options{Source: "x", AllowConfig: []string{"a"}, Select: sel()},
			"Options.AllowConfig accepts config changes against a contract: it needs Against"},
		{"unknown id", verify.Options{Source: "x", Allowances: []verify.Allowance{lint, {ID: "header.lnt"}}},
			`Options.Allowances[1] no finding has the id "header.lnt"; the header findings are header.dtype, header.lint`},
		{"subject not parsed", verify.Options{Source: "x", Allowances: []verify.Allowance{{ID: "header.lint", Subject: "*.safetensors"}}},
			"Options.Allowances[0] has a Subject but no glob: make it with ParseAllowance"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := verify.Run(context.Background(), tc.req)
			var oe *ckpt.OptionError
			require.ErrorAs(t, err, &oe)
			require.ErrorIs(t, err, ckpt.ErrUsage)
			assert.EqualError(t, err, tc.msg)
		})
	}
	// with Against, the source is opened: an open error, not an option error
	_, err = verify.Run(context.Background(), verify.Options{Source: "/nonexistent/src", Against: "/nonexistent/k.json", Select: sel("a"),
		AllowConfig: []string{"b"}, Allowances: []verify.Allowance{lint}})
	require.ErrorContains(t, err, "opening contract: ")
	assert.NotErrorIs(t, err, ckpt.ErrUsage)
}

// TestRunAllowances: the allowances of Options accept the findings of
// each report afresh; Run leaves the Options' own as they were.
func TestRunAllowances(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "lint.safetensors")
	hdr := `{"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`
	require.NoError(t, os.WriteFile(p, ckpttest.Frame(hdr, 8), 0o644))
	lint, err := verify.ParseAllowance("header.lint:*.safetensors")
	require.NoError(t, err)
	opt := verify.Options{Source: p, Arch: verify.ArchNone, Strict: true, Allowances: []verify.Allowance{lint}}
	for range 2 {
		rep, err := verify.Run(context.Background(), opt)
		require.NoError(t, err)
		assert.True(t, rep.OK)
		require.Len(t, rep.Allowed, 1)
		assert.Len(t, rep.Allowed[0].Findings, 1, "accepted once per report")
	}
	assert.Empty(t, opt.Allowances[0].Findings)
}

// TestParseAllowance: the allowances ParseAllowance refuses are an
// *AllowanceError saying which cause, in words without flags.
func TestParseAllowance(t *testing.T) {
	t.Parallel()
	a, err := verify.ParseAllowance("header.lint:*.safetensors")
	require.NoError(t, err)
	assert.Equal(t, verify.Allowance{Spec: "header.lint:*.safetensors", ID: "header.lint", Subject: "*.safetensors", Findings: []ckpt.Finding{}},
		verify.Allowance{Spec: a.Spec, ID: a.ID, Subject: a.Subject, Findings: a.Findings})
	for _, tc := range []struct {
		spec, msg string
		want      verify.AllowanceError
	}{
		{"header.lnt", `allowance "header.lnt": no finding has the id "header.lnt"; the header findings are header.dtype, header.lint`,
			verify.AllowanceError{Spec: "header.lnt", UnknownID: `no finding has the id "header.lnt"; the header findings are header.dtype, header.lint`}},
		{"header.lint:", `allowance "header.lint:": empty SUBJECT (want ID or ID:SUBJECT)`, verify.AllowanceError{Spec: "header.lint:", EmptySubject: true}},
		{"header.lint:[", `allowance "header.lint:[": invalid SUBJECT glob "[": glob: syntax error at 1: unexpected end of input`,
			verify.AllowanceError{Spec: "header.lint:[", Subject: "["}},
	} {
		_, err := verify.ParseAllowance(tc.spec)
		var e *verify.AllowanceError
		require.ErrorAs(t, err, &e, tc.spec)
		require.ErrorIs(t, err, ckpt.ErrUsage, tc.spec)
		assert.EqualError(t, err, tc.msg, tc.spec)
		assert.Equal(t, tc.want.Subject != "", e.Glob != nil, "a glob error is kept: %s", tc.spec)
		e.Glob = nil
		assert.Equal(t, tc.want, *e, tc.spec)
	}
}

// The workflow: a contract of a checkpoint, then that checkpoint held
// against it, with the typed summary record.
func TestRunAgainstContract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	kr, err := contract.Run(ctx, contract.Options{Source: dir, ReadData: true, Progress: ckpt.NewProgress()})
	require.NoError(t, err)
	require.NotNil(t, kr.Contract)
	assert.NotEmpty(t, kr.Contract.Tensors)

	_, err = contract.Run(ctx, contract.Options{Source: dir, Out: filepath.Join(dir, ckpt.IndexFile)})
	require.ErrorIs(t, err, ckpt.ErrUsage, "an output over an input is refused")

	path := filepath.Join(t.TempDir(), "k.json")
	require.NoError(t, writeContractFile(path, kr.Contract))
	rep, err := verify.Run(ctx, verify.Options{Source: dir, Against: path, Strict: true})
	require.NoError(t, err)
	require.NotNil(t, rep.Against)
	assert.Equal(t, path, rep.Against.Contract)
	assert.True(t, rep.Strict)
	rec := rep.SummaryRecord()
	n := rep.Counts()
	assert.Equal(t, verify.SummaryRecord{Source: rep.Source, OK: rep.OK, Strict: true, Fail: n[ckpt.Fail], Warn: n[ckpt.Warn], Pass: n[ckpt.Pass], Skip: n[ckpt.Skip]}, rec)
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"source":".*","ok":(true|false),"strict":true,"fail":\d+,"warn":\d+,"pass":\d+,"skip":\d+\}$`, string(b))
}

func writeContractFile(path string, k *contract.Contract) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := contract.Write(f, k); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
