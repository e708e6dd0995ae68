package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestVerifyUsageWords: verify's rules of the command line, each in its
// exact words, exit 2, and the first broken one wins (in the order
// --arch, the --match then --exclude globs, --match/--exclude without
// --against, --allow-config without --against, --allow-finding), before
// the contract or the source is opened; the contract is opened before
// the source.
func TestVerifyUsageWords(t *testing.T) {
	t.Parallel()
	const src = "/nonexistent/ckpt-src"
	const globErr = `glob: syntax error at 1: unexpected end of input`
	const ids = `(the ids are index.*, file.*, header.*, fp8.*, scheme.*, arch.*, data.*, cache.*, contract.*; go doc ./ckpt/verify lists them)`
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"arch empty", []string{"--arch", ""}, `unknown --arch "" (want auto, qwen3_5 or none)`},
		{"arch before globs", []string{"--arch", "llama", "--match", "["}, `unknown --arch "llama" (want auto, qwen3_5 or none)`},
		{"match glob", []string{"--match", "[", "--allow-finding", "nope"}, `invalid --match glob "[": ` + globErr},
		{"exclude glob", []string{"--exclude", "["}, `invalid --exclude glob "[": ` + globErr},
		{"match glob first", []string{"--exclude", "[", "--match", "[a"}, `invalid --match glob "[a": glob: syntax error at 2: unexpected end of input`},
		{"exclude without against", []string{"--exclude", "a"}, "--match and --exclude select tensors for --against; give --against FILE"},
		{"match before allow-config", []string{"--allow-config", "b", "--match", "a"}, "--match and --exclude select tensors for --against; give --against FILE"},
		{"allow-config before allow-finding", []string{"--allow-config", "b", "--allow-finding", "nope"},
			"--allow-config accepts config changes against a contract; give --against FILE"},
		{"unknown id of a group", []string{"--allow-finding", "header.lnt"},
			`--allow-finding: no finding has the id "header.lnt"; the header findings are header.dtype, header.lint`},
		{"lint id", []string{"--allow-finding", "header.order"},
			"--allow-finding: header.order is a header lint, reported as finding header.lint (its message names the lint; header.lint:FILE accepts the lints of one file)"},
		{"unknown id", []string{"--allow-finding", "nonsense"}, `--allow-finding: no finding has the id "nonsense" ` + ids},
		{"empty subject", []string{"--allow-finding", "header.lint:"},
			`--allow-finding: "header.lint:": want ID or ID:SUBJECT (a glob of the tensor or file names the finding names), got an empty SUBJECT`},
		{"subject glob", []string{"--allow-finding", "header.lint:["}, `--allow-finding: invalid --allow-finding glob "[": ` + globErr},
		{"first allowance", []string{"--allow-finding", "header.lint", "--allow-finding", "nope", "--allow-finding", "header.lint:["},
			`--allow-finding: no finding has the id "nope" ` + ids},
		{"allow-finding before the contract", []string{"--against", "/nonexistent/k.json", "--allow-finding", "nope"},
			`--allow-finding: no finding has the id "nope" ` + ids},
		{"contract before the source", []string{"--against", "/nonexistent/k.json", "--match", "a", "--allow-finding", "header.lint"},
			"opening contract: open /nonexistent/k.json: no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runApp(t, append([]string{"verify", src}, tc.args...)...)
			assert.Equal(t, exitUnreadable, code, stderr)
			assert.Equal(t, "ckpt: "+tc.msg+"\n", stderr)
			assert.Empty(t, stdout)
		})
	}
}

// TestVerifyAllowConfigWords: an --allow-config path that names no config
// key exits 2 in these exact words, for each of its causes, and the first
// such path of several is the one named.
func TestVerifyAllowConfigWords(t *testing.T) {
	t.Parallel()
	contract, ft := configPair(t)
	const none = " names no config key of the contract or of the checkpoint"
	for _, tc := range []struct {
		allow []string
		msg   string
	}{
		{[]string{"rms_norm_eps"}, `--allow-config "rms_norm_eps"` + none + `: did you mean 'text_config.rms_norm_eps'? (give the full dotted path, as ` +
			"`ckpt diff` lists it)"},
		{[]string{"text_config.nope"}, `--allow-config "text_config.nope"` + none + " (give the full dotted path, as `ckpt diff` lists it)"},
		{[]string{"transformers_version"}, `--allow-config "transformers_version"` + none +
			" (a bookkeeping key, which contracts do not record) (give the full dotted path, as `ckpt diff` lists it)"},
		{[]string{"quantization_config.modules_to_not_convert"}, `--allow-config "quantization_config.modules_to_not_convert"` + none +
			": the contract records it with the FP8 scheme, compared by contract.fp8_not_convert (for the tensors --match/--exclude select), " +
			"which --allow-config does not accept"},
		{[]string{"text_config.rms_norm_eps", "nope\x1b", "rms_norm_eps"}, `--allow-config "nope\x1b"` + none +
			" (give the full dotted path, as `ckpt diff` lists it)"},
	} {
		args := []string{"verify", ft, "--against", contract}
		for _, a := range tc.allow {
			args = append(args, "--allow-config", a)
		}
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, exitUnreadable, code, tc.allow)
		assert.Equal(t, "ckpt: "+tc.msg+"\n", stderr, tc.allow)
		assert.Empty(t, stdout, tc.allow)
	}
}
